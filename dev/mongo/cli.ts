// `npm run mongo`: runs the stand-in until interrupted and prints its connection string.
import { wholeNumberFlag } from '../stand-in/index.js'
import { parseArgs } from 'node:util'
import { startMongo } from './index.js'
import type { MongoUser, StartMongoOptions } from './index.js'

const USAGE = 'usage: npm run mongo -- [--port N] [--replica-set NAME [--uninitiated]] [--data-dir DIR] [--user NAME:PASSWORD:ROLE@DB ...]'

function parseUser (value: string): MongoUser {
  // The password may itself contain ':' so the name is before the first and the role after the last.
  const first = value.indexOf(':')
  const last = value.lastIndexOf(':')
  const roleSpec = value.slice(last + 1)
  const at = roleSpec.indexOf('@')
  if (first <= 0 || last === first || at <= 0 || at === roleSpec.length - 1) {
    throw new Error(`--user expects NAME:PASSWORD:ROLE@DB, got '${value.replace(/:.*:/, ':***:')}'`)
  }
  return {
    user: value.slice(0, first),
    password: value.slice(first + 1, last),
    roles: [{ role: roleSpec.slice(0, at), db: roleSpec.slice(at + 1) }]
  }
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      'replica-set': { type: 'string' },
      // As mongod --replSet before rs.initiate(): for trying the first-start path of a deployment.
      uninitiated: { type: 'boolean' },
      'data-dir': { type: 'string' },
      user: { type: 'string', multiple: true },
      help: { type: 'boolean' }
    }
  })
  if (values.help === true) {
    process.stdout.write(USAGE + '\n')
    return
  }
  const options: StartMongoOptions = {}
  const port = wholeNumberFlag(values.port, 'port', 65535)
  if (port !== undefined) options.port = port
  if (values.uninitiated === true && values['replica-set'] === undefined) throw new Error('--uninitiated needs --replica-set')
  if (values['replica-set'] !== undefined) options.replicaSet = { name: values['replica-set'], initiated: values.uninitiated !== true }
  if (values['data-dir'] !== undefined) options.dataDir = values['data-dir']
  if (values.user !== undefined) options.users = values.user.map(parseUser)
  const server = await startMongo(options)
  process.stdout.write(server.uri + '\n')
  const stop = (): void => {
    server.close().then(() => process.exit(0), (error: unknown) => {
      process.stderr.write(`${String(error)}\n`)
      process.exit(1)
    })
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`)
  process.exit(1)
})
