import { ConfigError } from './lib/config.js'
import { loadConfig } from './stores/config-file.js'

// The specification accepts only UTC deployments; the process itself runs in UTC so that every
// Date the code makes agrees with the configuration.
process.env.TZ = 'UTC'

function loadOrExit () {
  try {
    return loadConfig({ argv: process.argv.slice(2), env: process.env, service: 'backend' })
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
}

const { config, warnings } = loadOrExit()
// The service's code is loaded once the configuration is known to be good: a refused one costs
// the operator no wait for everything the service imports.
const [{ default: Fastify }, { default: fp }, { default: closeWithGrace }, { default: app, initSessionLibrary, serverOptions }] = await Promise.all([
  import('fastify'), import('fastify-plugin'), import('close-with-grace'), import('./app.js')
])
const server = Fastify(serverOptions(config))
for (const warning of warnings) server.log.warn(warning)

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) server.log.error({ err }, 'shutting down after an error')
  else server.log.info({ signal }, 'shutting down')
  await server.close()
})

try {
  // The session library is the process's: configured here, once, before the app is built.
  initSessionLibrary(config, server.log)
  await server.register(fp(app), { config })
  // In a container HOST is 0.0.0.0 and the host publishes the port on 127.0.0.1 only.
  await server.listen({ port: config.backend.port, host: process.env.HOST ?? '127.0.0.1' })
} catch (error) {
  // One line for the operator (the database or the session core may be unreachable); the log has the rest.
  server.log.fatal({ err: error }, 'backend could not start')
  process.stderr.write(`startup: ${(error as Error).message.split('\n')[0]}\n`)
  process.exit(1)
}
