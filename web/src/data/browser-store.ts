import { memoryStore, type KeyValueStore } from '../lib/storage.js'

/** The browser's local storage, or a store in memory when the browser refuses it (private modes, policies). */
export function browserStore (): KeyValueStore {
  try {
    const store = window.localStorage
    store.getItem('probe')
    return store
  } catch {
    return memoryStore()
  }
}
