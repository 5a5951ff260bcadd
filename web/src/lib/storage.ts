/** The part of the Web Storage API the client uses, so the rules run against a Map in tests. */
export interface KeyValueStore {
  getItem: (key: string) => string | null
  setItem: (key: string, value: string) => void
  removeItem: (key: string) => void
}

/** A store in memory: for tests, and as the fallback when the browser refuses storage. */
export function memoryStore (initial: Record<string, string> = {}): KeyValueStore & { entries: () => Record<string, string> } {
  const map = new Map(Object.entries(initial))
  return {
    getItem: (key) => map.get(key) ?? null,
    setItem: (key, value) => { map.set(key, String(value)) },
    removeItem: (key) => { map.delete(key) },
    entries: () => Object.fromEntries(map)
  }
}

export function readJson<T> (store: KeyValueStore, key: string): T | null {
  const text = store.getItem(key)
  if (text === null) return null
  try {
    return JSON.parse(text) as T
  } catch {
    return null
  }
}
