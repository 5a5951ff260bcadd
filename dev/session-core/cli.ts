// npm run session-core -- [--port 3567] [--api-key KEY] [--mongo-uri URI]
//   [--access-token-validity SECONDS] [--refresh-token-validity MINUTES]
import { wholeNumberFlag } from '../stand-in/index.js'
import { parseArgs } from 'node:util'
import closeWithGrace from 'close-with-grace'
import { LOG_REDACT, startSessionCore } from './index.js'

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      'api-key': { type: 'string' },
      'mongo-uri': { type: 'string' },
      'access-token-validity': { type: 'string' },
      'refresh-token-validity': { type: 'string' }
    },
    strict: true
  })
  const port = wholeNumberFlag(values.port, 'port', 65535) ?? 3567
  const accessTokenValiditySec = wholeNumberFlag(values['access-token-validity'], 'access-token-validity')
  const refreshTokenValidityMin = wholeNumberFlag(values['refresh-token-validity'], 'refresh-token-validity')
  const core = await startSessionCore({
    port,
    ...(values['api-key'] === undefined ? {} : { apiKey: values['api-key'] }),
    ...(values['mongo-uri'] === undefined ? {} : { mongoUri: values['mongo-uri'] }),
    ...(accessTokenValiditySec === undefined ? {} : { accessTokenValiditySec }),
    ...(refreshTokenValidityMin === undefined ? {} : { refreshTokenValidityMin }),
    logger: {
      level: 'info',
      redact: LOG_REDACT,
      ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty' } } : {})
    }
  })
  const storage = values['mongo-uri'] === undefined ? 'in memory' : 'in MongoDB'
  process.stdout.write(`session core (CDI 5.4 stand-in) listening on ${core.uri}, data ${storage}\n`)
  closeWithGrace({ delay: 5000 }, async ({ err }) => {
    if (err !== undefined) process.stderr.write(`session core stopping after error: ${err.message}\n`)
    await core.close()
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
