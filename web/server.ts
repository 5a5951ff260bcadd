// Serves the web client: the built files, and index.html for every other path so the client's
// routes (/day, /week, /auth/extprovider/callback) load on a reload or from a link. Apple answers
// a sign-in with a form posted to the callback route; the server turns that post into a GET of the
// same route (see callbackLocationFromForm). The bundle is
// built on demand for the given values (kept in a cache keyed by them and by the sources), or a
// prebuilt directory (web/dist from `npm run build:web`) is served as it is.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { extname, join, relative, resolve, sep } from 'node:path'
import { gzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { BUILD_VALUES_FILE, VALUES_PLACEHOLDER, builtValuesOf, bundleValues, valuesFromEnvironment, webDir, withValues, type WebValues } from './build.js'

export interface WebServerOptions extends WebValues {
  port: number
  /** Default 127.0.0.1. */
  host?: string
  /** Serve this prebuilt directory instead of building. */
  distDir?: string
  /** Where on-demand builds are kept (default: node_modules/.cache/calendar-web). */
  cacheDir?: string
}

export interface WebServer {
  url: string
  /** The directory being served. */
  distDir: string
  close: () => Promise<void>
}

const repositoryRoot = resolve(webDir, '..')

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2'
}

async function filesUnder (dir: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...await filesUnder(path))
    else found.push(path)
  }
  return found
}

/** Changes whenever a source of the bundle changes, so a stale cached build is never served. */
async function sourceFingerprint (): Promise<string> {
  const hash = createHash('sha256')
  const sources = [
    ...await filesUnder(join(webDir, 'src')),
    join(webDir, 'index.html'),
    join(webDir, 'build.ts'),
    ...(await filesUnder(join(repositoryRoot, 'lib', 'events'))),
    join(repositoryRoot, 'package-lock.json')
  ]
  for (const file of sources.sort()) {
    const info = await stat(file)
    hash.update(`${relative(repositoryRoot, file)}:${info.size}:${info.mtimeMs}\n`)
  }
  return hash.digest('hex')
}

/** Longer than a build takes on a busy machine: a lock older than this was left by a builder that died. */
const BUILD_LOCK_STALE_MS = 5 * 60_000

/**
 * Vite sets process.env.NODE_ENV to `production` while it builds, which would leak into everything
 * else running in this process (tests, the local stack), so the build runs in its own process.
 */
async function buildInChildProcess (outDir: string): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(webDir, 'build.ts'), '--out', outDir, '--without-values'], {
    cwd: repositoryRoot,
    // The build runs none of the code under test: it writes no coverage.
    env: withoutCoverage(process.env),
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  if (code !== 0) throw new Error(`building the web client failed (exit ${code}): ${stderr.trim()}`)
}

function withoutCoverage (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_V8_COVERAGE: _coverage, ...rest } = env
  return rest
}

/**
 * The directory holding a build of the current sources without values (each server writes its
 * own into index.html as it serves), building it first when there is none: one build per source
 * state, whatever the API URL or client ids of the servers that use it.
 */
export async function ensureBuild (cacheDir: string = join(repositoryRoot, 'node_modules', '.cache', 'calendar-web')): Promise<string> {
  const key = (await sourceFingerprint()).slice(0, 16)
  const target = join(cacheDir, key)
  if (existsSync(join(target, 'index.html'))) return target
  await mkdir(cacheDir, { recursive: true })
  // One process builds; the others starting at the same time (test files run side by side) wait for it.
  const lock = `${target}.lock`
  for (;;) {
    try {
      await mkdir(lock)
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    if (existsSync(join(target, 'index.html'))) return target
    const since = await stat(lock).then((info) => Date.now() - info.mtimeMs, () => 0)
    // A builder that died leaves its lock: past any build's length it is taken over.
    if (since > BUILD_LOCK_STALE_MS) await rm(lock, { recursive: true, force: true })
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  try {
    if (existsSync(join(target, 'index.html'))) return target
    const staging = `${target}.${process.pid}.${Date.now()}`
    await buildInChildProcess(staging)
    try {
      await rename(staging, target)
    } catch {
      // Another process finished the same build first; its copy is as good as this one.
      await rm(staging, { recursive: true, force: true })
    }
    return target
  } finally {
    await rm(lock, { recursive: true, force: true })
  }
}

interface Asset {
  body: Buffer
  gzip: Buffer | null
  type: string
  immutable: boolean
}

function htmlAsset (html: string): Asset {
  const body = Buffer.from(html)
  return { body, gzip: gzipSync(body, { level: 9 }), type: TYPES['.html'] ?? 'text/html; charset=utf-8', immutable: false }
}

async function loadAssets (dir: string): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>()
  for (const file of await filesUnder(dir)) {
    if (relative(dir, file) === BUILD_VALUES_FILE) continue
    const body = await readFile(file)
    const type = TYPES[extname(file)] ?? 'application/octet-stream'
    const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 512
    const path = '/' + relative(dir, file).split(sep).join('/')
    // Vite names every asset by its content hash: they never change under the same name.
    assets.set(path, { body, gzip: compressible ? gzipSync(body, { level: 9 }) : null, type, immutable: path.startsWith('/assets/') })
  }
  return assets
}

/** The single return route of provider sign-in and connect (web/src/lib/auth-params.ts). */
export const CALLBACK_PATH = '/auth/extprovider/callback'
/**
 * Apple's form holds a code, the state, an ID token of about a kilobyte and, the first time, the
 * person's name and email: a few kilobytes at most. Anything larger is not Apple's answer.
 */
export const CALLBACK_FORM_LIMIT_BYTES = 8 * 1024
// What the single-page callback reads (web/src/lib/oauth.ts, parseCallback). The ID token stays
// out of the URL: the backend takes the identity from its own code exchange, and a token in the
// address bar would land in the history.
const CARRIED_CALLBACK_FIELDS = ['code', 'state', 'user', 'error'] as const

/**
 * Where to send the browser after Apple posted its answer (response_mode=form_post) to the
 * callback route: the same route with the answer's fields as query parameters, so the client
 * finishes it like a query-mode answer. Null when the form is not such an answer (no code and no
 * error, or a field given twice).
 */
export function callbackLocationFromForm (body: string): string | null {
  const form = new URLSearchParams(body)
  const query = new URLSearchParams()
  for (const name of CARRIED_CALLBACK_FIELDS) {
    const values = form.getAll(name)
    if (values.length > 1) return null
    if (values[0] !== undefined) query.set(name, values[0])
  }
  if (!query.has('code') && !query.has('error')) return null
  return `${CALLBACK_PATH}?${query.toString()}`
}

function securityHeaders (values: ReturnType<typeof bundleValues>): Record<string, string> {
  const connect = ["'self'", new URL(values.apiUrl).origin]
  if (values.analyticsHost !== null) connect.push(new URL(values.analyticsHost).origin)
  if (values.placesApiKey !== null) connect.push('https://places.googleapis.com')
  return {
    'content-security-policy': [
      "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
      `connect-src ${connect.join(' ')}`, "object-src 'none'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'"
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'strict-origin-when-cross-origin',
    'x-frame-options': 'DENY'
  }
}

export async function startWebServer (options: WebServerOptions): Promise<WebServer> {
  const distDir = options.distDir !== undefined ? resolve(options.distDir) : await ensureBuild(options.cacheDir)
  if (!existsSync(join(distDir, 'index.html'))) throw new Error(`${distDir} has no index.html: build the web client first (npm run build:web)`)
  const assets = await loadAssets(distDir)
  const built = assets.get('/index.html') as Asset
  // A build without values (ensureBuild's, or `build.ts --without-values`) gets this server's.
  const index = built.body.includes(VALUES_PLACEHOLDER) ? htmlAsset(withValues(built.body.toString('utf8'), options)) : built
  assets.set('/index.html', index)
  const headers = securityHeaders(bundleValues(options))

  function send (request: IncomingMessage, response: ServerResponse, asset: Asset): void {
    const gzip = asset.gzip !== null && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))
    const body = gzip ? asset.gzip as Buffer : asset.body
    response.writeHead(200, {
      ...headers,
      'content-type': asset.type,
      'content-length': body.length,
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      vary: 'accept-encoding',
      ...(gzip ? { 'content-encoding': 'gzip' } : {})
    })
    response.end(request.method === 'HEAD' ? undefined : body)
  }

  /** Apple's form_post answer: read a small urlencoded body, answer 303 to the same route as a GET. */
  function redirectFormPost (request: IncomingMessage, response: ServerResponse): void {
    // The body is not read to its end when it is refused, so the connection is not reused.
    const refuse = (status: number) => { response.writeHead(status, { ...headers, 'cache-control': 'no-store', connection: 'close' }).end() }
    const type = String(request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase()
    if (type !== 'application/x-www-form-urlencoded') return refuse(415)
    if (Number(request.headers['content-length'] ?? 0) > CALLBACK_FORM_LIMIT_BYTES) return refuse(413)
    const chunks: Buffer[] = []
    let size = 0
    let refused = false
    request.on('data', (chunk: Buffer) => {
      if (refused) return
      size += chunk.length
      if (size > CALLBACK_FORM_LIMIT_BYTES) {
        refused = true
        refuse(413)
        return
      }
      chunks.push(chunk)
    })
    request.on('end', () => {
      if (refused) return
      let body: string
      try {
        body = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks))
      } catch {
        return refuse(400)
      }
      const location = callbackLocationFromForm(body)
      if (location === null) return refuse(400)
      response.writeHead(303, { ...headers, location, 'cache-control': 'no-store' }).end()
    })
  }

  const server = createServer((request, response) => {
    if (request.method === 'POST' && request.url?.split('?')[0] === CALLBACK_PATH) return redirectFormPost(request, response)
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', ...headers }).end()
      return
    }
    let path: string
    try {
      path = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname)
    } catch {
      response.writeHead(400, headers).end()
      return
    }
    const asset = assets.get(path)
    if (asset !== undefined && path !== '/index.html') return send(request, response, asset)
    // A missing file with an extension is a real 404; anything else is a client route.
    if (extname(path) !== '' && path !== '/index.html') {
      response.writeHead(404, { ...headers, 'content-type': 'text/plain; charset=utf-8' }).end('Not found')
      return
    }
    send(request, response, index)
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the web server has no TCP address')
  const host = options.host === undefined || options.host === '0.0.0.0' ? '127.0.0.1' : options.host
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`,
    distDir,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

// `npx tsx web/server.ts [--dist DIR]`: serve on WEB_PORT (default 9080) with the values the
// bundle in DIR was built with, or else the WEB_* values.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const distIndex = args.indexOf('--dist')
  const distDir = distIndex >= 0 ? args[distIndex + 1] : undefined
  const server = await startWebServer({
    ...(distDir === undefined ? null : await builtValuesOf(distDir)) ?? valuesFromEnvironment(),
    port: Number(process.env.WEB_PORT ?? 9080),
    ...(process.env.HOST !== undefined ? { host: process.env.HOST } : {}),
    ...(distDir === undefined ? {} : { distDir })
  })
  process.stdout.write(`web client on ${server.url}\n`)
  const stop = () => { server.close().then(() => process.exit(0), () => process.exit(1)) }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
