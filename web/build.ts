// Builds the web client with Vite. The API URL, the Google and Microsoft client ids, the Apple
// services id, the analytics key and host and the places key are fixed into the bundle here (specification: the web image is rebuilt
// when they change). `npm run build:web` writes web/dist from a configuration file
// (--config FILE, CONFIG_FILE or ./config.yaml) or from WEB_* environment variables.
// The code itself holds none of them: they are written into index.html (a JSON data block,
// web/src/config.ts), so one Vite build serves any values (web/server.ts fills a values-free
// build with each server's own).
import { existsSync } from 'node:fs'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'

export const webDir = dirname(fileURLToPath(import.meta.url))

/** Beside a bundle built by `--out`: the values it was built with (never served). */
export const BUILD_VALUES_FILE = 'build-values.json'

/** The values a bundle directory was built with, when it says. */
export async function builtValuesOf (distDir: string): Promise<WebValues | null> {
  const path = join(distDir, BUILD_VALUES_FILE)
  return existsSync(path) ? JSON.parse(await readFile(path, 'utf8')) as WebValues : null
}

export interface WebValues {
  /** backend.apiUrl, ending in /api. */
  apiUrl: string
  googleClientId?: string | null
  /** extprovider.endpointBase: a development Google stand-in's origin instead of Google's. */
  googleEndpointBase?: string | null
  /** extprovider2.clientId: Microsoft sign-in (common tenant) is offered only with it. */
  microsoftClientId?: string | null
  /** extprovider2.endpointBase: a development Microsoft stand-in's origin instead of Microsoft's. */
  microsoftEndpointBase?: string | null
  /** idsignin.servicesId: Apple sign-in is offered only with it. */
  appleServicesId?: string | null
  /** idsignin.endpointBase: a development Apple stand-in's origin instead of Apple's. */
  appleEndpointBase?: string | null
  analyticsKey?: string | null
  analyticsHost?: string | null
  placesApiKey?: string | null
}

function originOr (endpointBase: string | null | undefined, providerOrigin: string): string {
  return endpointBase === undefined || endpointBase === null || endpointBase === '' ? providerOrigin : new URL(endpointBase).origin
}

/** What the page reads from the configuration block of its index.html (web/src/config.ts). */
export function bundleValues (values: WebValues) {
  const present = (value: string | null | undefined) => value === undefined || value === null || value === '' ? null : value
  const apiUrl = new URL(values.apiUrl)
  return {
    apiUrl: apiUrl.toString().replace(/\/+$/, ''),
    googleClientId: present(values.googleClientId),
    googleAuthorizationEndpoint: `${(present(values.googleEndpointBase) ?? 'https://accounts.google.com').replace(/\/+$/, '')}/o/oauth2/v2/auth`,
    microsoftClientId: present(values.microsoftClientId),
    // The providers' documented authorization paths; a stand-in serves the same paths (dev/oidc),
    // and like the backend (lib/identity-providers.ts) only the base's origin is taken from it.
    microsoftAuthorizationEndpoint: `${originOr(values.microsoftEndpointBase, 'https://login.microsoftonline.com')}/common/oauth2/v2.0/authorize`,
    appleServicesId: present(values.appleServicesId),
    appleAuthorizationEndpoint: `${originOr(values.appleEndpointBase, 'https://appleid.apple.com')}/auth/authorize`,
    analyticsKey: present(values.analyticsKey),
    analyticsHost: present(values.analyticsHost),
    placesApiKey: present(values.placesApiKey)
  }
}

// Minified output carries this first line so the repository's lint run skips it.
const BANNER = '/* eslint-disable */'

/** What index.html holds where its values go, until they are written in. */
export const VALUES_PLACEHOLDER = '__CALENDAR_WEB_CONFIG__'

/** index.html with the values written in; its data block cannot be ended by a value (`</script>`). */
export function withValues (html: string, values: WebValues): string {
  if (!html.includes(VALUES_PLACEHOLDER)) throw new Error('index.html has no place for its values (built already with others?)')
  const json = JSON.stringify(bundleValues(values)).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026')
  return html.replace(VALUES_PLACEHOLDER, () => json)
}

/** Where web/src/sw.ts takes the list of the build's assets. */
const ASSETS_PLACEHOLDER = /(["'`])__CALENDAR_BUILT_ASSETS__\1/

/**
 * Writes the build's assets into the service worker, which caches them all at install: the parts
 * the page fetches only when opened (a dynamic import) are named nowhere else it can read.
 */
async function listAssetsInWorker (outDir: string): Promise<void> {
  const worker = join(outDir, 'sw.js')
  const assets = (await readdir(join(outDir, 'assets'))).sort().map((name) => `/assets/${name}`)
  const code = await readFile(worker, 'utf8')
  if (!ASSETS_PLACEHOLDER.test(code)) throw new Error('sw.js has no place for the list of assets')
  await writeFile(worker, code.replace(ASSETS_PLACEHOLDER, () => JSON.stringify(JSON.stringify(assets))))
}

/** Builds the bundle into `outDir`; with `values`, they are written into its index.html, else it keeps the placeholder. */
export async function buildWeb (options: { outDir: string, values?: WebValues }): Promise<void> {
  const { build } = await import('vite')
  await build({
    root: webDir,
    configFile: false,
    envDir: false,
    logLevel: 'warn',
    clearScreen: false,
    publicDir: false,
    resolve: { alias: [{ find: /^rrule$/, replacement: join(webDir, 'src/rrule.ts') }] },
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: resolve(options.outDir),
      emptyOutDir: true,
      target: 'es2022',
      sourcemap: false,
      reportCompressedSize: false,
      modulePreload: false,
      rolldownOptions: {
        // The service worker (web/src/sw.ts) is its own entry at /sw.js: a worker's scope is its
        // path, and its name must not change between releases.
        input: { index: join(webDir, 'index.html'), sw: join(webDir, 'src/sw.ts') },
        output: { postBanner: BANNER, entryFileNames: (chunk) => chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js' }
      }
    }
  })
  await listAssetsInWorker(resolve(options.outDir))
  if (options.values !== undefined) {
    const index = join(resolve(options.outDir), 'index.html')
    await writeFile(index, withValues(await readFile(index, 'utf8'), options.values))
  }
}

/** The values from the service's configuration file (only the keys the web bundle takes). */
export async function valuesFromConfigFile (path: string): Promise<WebValues> {
  const document = parse(await readFile(path, 'utf8')) as Record<string, Record<string, unknown> | undefined>
  const text = (value: unknown) => typeof value === 'string' ? value : null
  const apiUrl = text(document.backend?.apiUrl)
  if (apiUrl === null) throw new Error(`${path}: backend.apiUrl is required to build the web client`)
  return {
    apiUrl,
    googleClientId: text(document.extprovider?.clientId),
    googleEndpointBase: text(document.extprovider?.endpointBase),
    microsoftClientId: text(document.extprovider2?.clientId),
    microsoftEndpointBase: text(document.extprovider2?.endpointBase),
    appleServicesId: text(document.idsignin?.servicesId),
    appleEndpointBase: text(document.idsignin?.endpointBase),
    analyticsKey: text(document.analytics?.key),
    analyticsHost: text(document.analytics?.host),
    placesApiKey: text(document.maps?.placesApiKey)
  }
}

export function valuesFromEnvironment (env: NodeJS.ProcessEnv = process.env): WebValues {
  return {
    apiUrl: env.WEB_API_URL ?? 'http://localhost:3000/api',
    googleClientId: env.WEB_GOOGLE_CLIENT_ID ?? null,
    googleEndpointBase: env.WEB_GOOGLE_ENDPOINT_BASE ?? null,
    microsoftClientId: env.WEB_MICROSOFT_CLIENT_ID ?? null,
    microsoftEndpointBase: env.WEB_MICROSOFT_ENDPOINT_BASE ?? null,
    appleServicesId: env.WEB_APPLE_SERVICES_ID ?? null,
    appleEndpointBase: env.WEB_APPLE_ENDPOINT_BASE ?? null,
    analyticsKey: env.WEB_ANALYTICS_KEY ?? null,
    analyticsHost: env.WEB_ANALYTICS_HOST ?? null,
    placesApiKey: env.WEB_PLACES_API_KEY ?? null
  }
}

function configPath (args: string[]): string | null {
  const index = args.findIndex((arg) => arg === '--config' || arg.startsWith('--config='))
  if (index >= 0) {
    const arg = args[index] as string
    return arg.includes('=') ? arg.slice('--config='.length) : (args[index + 1] ?? null)
  }
  if (process.env.CONFIG_FILE !== undefined && process.env.CONFIG_FILE !== '') return process.env.CONFIG_FILE
  return existsSync('config.yaml') ? 'config.yaml' : null
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const outIndex = args.indexOf('--out')
  const outDir = outIndex >= 0 ? resolve(args[outIndex + 1] ?? '') : join(webDir, 'dist')
  const file = configPath(args)
  if (args.includes('--without-values')) {
    // web/server.ts builds once per source state and writes each server's values in as it serves.
    await buildWeb({ outDir })
    process.stdout.write(`web client built into ${outDir} (without values)\n`)
  } else {
    const values = file === null ? valuesFromEnvironment() : await valuesFromConfigFile(file)
    await buildWeb({ outDir, values })
    // The server of this bundle derives its Content-Security-Policy from the same values, so it
    // reads them from here rather than being told them again (they are public: the bundle holds them).
    await writeFile(join(outDir, BUILD_VALUES_FILE), JSON.stringify(values))
    process.stdout.write(`web client built into ${outDir} (API ${bundleValues(values).apiUrl})\n`)
  }
}
