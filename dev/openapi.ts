// `npm run openapi`: writes the backend's OpenAPI document, generated from the route schemas, to
// openapi.json at the root (test/backend/openapi.test.ts fails when the file is out of date).
// It builds the app against throwaway stand-ins, so nothing needs to be running.
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { initSessionLibrary, serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { documentText } from '../plugins/external/openapi.js'
import { startMongo } from './mongo/index.js'
import { startSessionCore } from './session-core/index.js'
import { documentedBlocks } from './openapi-blocks.js'

const OPENAPI_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'openapi.json')

const mongo = await startMongo()
const core = await startSessionCore({ apiKey: 'openapi-session-core-key' })
const { config } = parseConfig(stringify({
  runtime: { nodeEnv: 'development', timezone: 'UTC', logLevel: 'warn' },
  web: { url: 'http://localhost:9080' },
  backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'openapi-service-token' },
  database: { uri: mongo.uri.replace(/\/?(\?|$)/, '/calendar$1') },
  sessions: { uri: core.uri, key: 'openapi-session-core-key' },
  sync: { databaseUri: mongo.uri.replace(/\/?(\?|$)/, '/sync$1'), internalAuthToken: 'openapi', callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: 'http://127.0.0.1:9' },
  ...documentedBlocks()
}), 'backend')

const server = Fastify({ ...serverOptions(config), logger: false })
initSessionLibrary(config, server.log)
await server.register(fp(app), { config })
await server.ready()
writeFileSync(OPENAPI_FILE, documentText(server))
process.stdout.write(`wrote ${OPENAPI_FILE}\n`)
await server.close()
await core.close()
await mongo.close()
