// The service worker: an offline reload still opens the calendar (with the writes this browser
// keeps for the server, see lib/pending-writes.ts). Pages are asked of the network first, so a
// new release is seen at once online; the cached index.html answers only when no answer comes.
// Hashed assets never change under their name, so the cached copy is used first. Nothing of the
// API (another origin) passes through here.
interface ExtendableEvent extends Event { waitUntil: (work: Promise<unknown>) => void }
interface FetchEvent extends ExtendableEvent { request: Request, respondWith: (answer: Promise<Response>) => void }
interface WorkerScope {
  location: Location
  addEventListener: ((type: 'install' | 'activate', listener: (event: ExtendableEvent) => void) => void) & ((type: 'fetch', listener: (event: FetchEvent) => void) => void)
  skipWaiting: () => Promise<void>
  clients: { claim: () => Promise<void> }
}

const scope = self as unknown as WorkerScope
const CACHE = 'calendar-shell-v1'
const SHELL = '/index.html'

/**
 * Every asset of this build (a JSON list written in by web/build.ts): also the parts the page
 * fetches only when a person opens them (web/src/ui/lazy.ts), which the page does not name.
 */
const BUILT_ASSETS = '__CALENDAR_BUILT_ASSETS__'

function builtAssets (): string[] {
  try {
    const list = JSON.parse(BUILT_ASSETS) as unknown
    return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string' && item.startsWith('/assets/')) : []
  } catch {
    return []
  }
}

/** The page and the assets of its build (script, styles, parts opened later), so the first offline reload has them all. */
async function cacheShell (): Promise<void> {
  const cache = await caches.open(CACHE)
  const page = await fetch(SHELL, { cache: 'no-cache' })
  if (!page.ok) return
  const html = await page.clone().text()
  await cache.put(SHELL, page)
  const named = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1] as string)
  await cache.addAll([...new Set([...named, ...builtAssets()])])
}

scope.addEventListener('install', (event) => {
  event.waitUntil(cacheShell().then(() => scope.skipWaiting()))
})

scope.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) if (name !== CACHE) await caches.delete(name)
    await scope.clients.claim()
  })())
})

async function pageAnswer (request: Request): Promise<Response> {
  try {
    const answer = await fetch(request)
    if (answer.ok) await (await caches.open(CACHE)).put(SHELL, answer.clone())
    return answer
  } catch (error) {
    const kept = await caches.match(SHELL)
    if (kept !== undefined) return kept
    throw error
  }
}

async function assetAnswer (request: Request): Promise<Response> {
  const kept = await caches.match(request)
  if (kept !== undefined) return kept
  const answer = await fetch(request)
  if (answer.ok) await (await caches.open(CACHE)).put(request, answer.clone())
  return answer
}

scope.addEventListener('fetch', (event) => {
  const { request } = event
  const url = new URL(request.url)
  if (request.method !== 'GET' || url.origin !== scope.location.origin) return
  if (request.mode === 'navigate') event.respondWith(pageAnswer(request))
  else if (url.pathname.startsWith('/assets/')) event.respondWith(assetAnswer(request))
})
