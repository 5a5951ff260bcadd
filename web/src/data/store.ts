// A tiny observable value and the hook that renders from it: the app's few pieces of shared state
// (session, sync status, stream status) do not need more than this.
import { useEffect, useState } from 'preact/hooks'

export interface Store<T> {
  get: () => T
  set: (next: T | ((previous: T) => T)) => void
  subscribe: (listener: (value: T) => void) => () => void
}

export function createStore<T> (initial: T): Store<T> {
  let value = initial
  const listeners = new Set<(value: T) => void>()
  return {
    get: () => value,
    set (next) {
      const resolved = typeof next === 'function' ? (next as (previous: T) => T)(value) : next
      if (Object.is(resolved, value)) return
      value = resolved
      for (const listener of [...listeners]) listener(value)
    },
    subscribe (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    }
  }
}

export function useStore<T> (store: Store<T>): T {
  const [value, setValue] = useState(store.get)
  useEffect(() => {
    setValue(store.get())
    return store.subscribe(setValue)
  }, [store])
  return value
}
