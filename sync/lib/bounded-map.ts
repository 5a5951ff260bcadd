/**
 * Sets `key` in `map`, and past `max` entries drops the oldest one (a Map iterates in insertion
 * order): the in-memory caches of a long-running process stay bounded however many keys come.
 */
export function setBounded<K, V> (map: Map<K, V>, key: K, value: V, max: number): void {
  map.set(key, value)
  if (map.size > max) {
    const oldest = map.keys().next()
    if (oldest.done !== true) map.delete(oldest.value)
  }
}
