import { ConfigError } from '../lib/config.js'
import { loadConfig } from '../stores/config-file.js'

// The specification accepts only UTC deployments; the process itself runs in UTC.
process.env.TZ = 'UTC'

function exitWith (message: string): never {
  process.stderr.write(`${message}\n`)
  process.exit(1)
}

function loadOrExit () {
  try {
    return loadConfig({ argv: process.argv.slice(2), env: process.env, service: 'sync' })
  } catch (error) {
    if (error instanceof ConfigError) exitWith(error.message)
    throw error
  }
}

const { config, warnings } = loadOrExit()
// The service's code is loaded once the configuration is known to be good (server.ts does the same).
const [{ default: Fastify }, { default: fp }, { default: closeWithGrace }, { default: app, syncServerOptions }, { SyncStartupError }] = await Promise.all([
  import('fastify'), import('fastify-plugin'), import('close-with-grace'), import('./app.js'), import('./lib/isolation.js')
])
const server = Fastify(syncServerOptions(config))
for (const warning of warnings) server.log.warn(warning)

try {
  await server.register(fp(app), { config })
  await server.ready()
} catch (error) {
  // Isolation and least-privilege refusals are one clear line, like configuration errors.
  if (error instanceof SyncStartupError) exitWith(`sync: ${error.message}`)
  server.log.fatal({ err: error }, 'Sync service could not start')
  process.exit(1)
}

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) server.log.error({ err }, 'shutting down after an error')
  else server.log.info({ signal }, 'shutting down')
  await server.close()
})

try {
  await server.listen({ port: config.sync.port, host: process.env.HOST ?? '127.0.0.1' })
} catch (error) {
  server.log.fatal({ err: error }, 'Sync service could not start')
  process.exit(1)
}
