// Parts of the page a person rarely opens (Preferences, the CalDAV form) are fetched the first time
// they are wanted, so the JavaScript every page load pays for stays within its budget (bench/web.ts).
// The service worker caches them with the rest of the build (web/src/sw.ts), so they open offline too.
import { useEffect, useState } from 'preact/hooks'
import { notify } from '../data/calendar.js'

interface LazyPart<T> {
  /** The part once it has arrived; undefined until then. */
  loaded: () => T | undefined
  /** Fetches the part (once; again after a failure, for instance offline before it was cached). */
  load: () => Promise<T>
}

export function lazyPart<T> (fetchPart: () => Promise<T>): LazyPart<T> {
  let part: T | undefined
  let loading: Promise<T> | undefined
  return {
    loaded: () => part,
    load: () => {
      loading ??= fetchPart().then((arrived) => {
        part = arrived
        return arrived
      }, (error: unknown) => {
        loading = undefined
        throw error
      })
      return loading
    }
  }
}

/**
 * The part while it is `wanted` (a dialog opened): fetched then, and the component drawn again once
 * it has arrived. When it cannot be fetched, the person is told so and `onFailed` lets the caller
 * stop wanting it, so the next try fetches again.
 */
export function useLazyPart<T> (part: LazyPart<T>, wanted: boolean, what: string, onFailed: () => void): T | undefined {
  const [, setArrivals] = useState(0)
  useEffect(() => {
    if (!wanted || part.loaded() !== undefined) return
    part.load().then(() => setArrivals((count) => count + 1), (error: unknown) => {
      notify(`${what} could not be opened: ${error instanceof Error ? error.message : String(error)}`, 'error')
      onFailed()
    })
  }, [wanted])
  return part.loaded()
}
