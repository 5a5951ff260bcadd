// npx tsx dev/microsoft/cli.ts [--port 4020] [--client ID:SECRET:REDIRECT_URI[,REDIRECT_URI...]]...
//   [--account EMAIL[:Display Name]]... [--work-account EMAIL[:Display Name]]... [--access-token-lifetime SECONDS]
import { wholeNumberFlag } from '../stand-in/index.js'
import { parseArgs } from 'node:util'
import closeWithGrace from 'close-with-grace'
import { LOG_REDACT, startMicrosoft } from './index.js'
import type { AccountSetup, ClientRegistration } from './index.js'

const DEFAULT_PORT = 4020

function parseClient (value: string): ClientRegistration {
  const first = value.indexOf(':')
  const second = value.indexOf(':', first + 1)
  if (first <= 0 || second <= first + 1) throw new Error(`--client must be ID:SECRET:REDIRECT_URI[,REDIRECT_URI...], got "${value}"`)
  const redirectUris = value.slice(second + 1).split(',').filter((uri) => uri !== '')
  if (redirectUris.length === 0) throw new Error(`--client needs at least one redirect URI: "${value}"`)
  return { clientId: value.slice(0, first), clientSecret: value.slice(first + 1, second), redirectUris }
}

function parseAccount (value: string, kind: 'personal' | 'work'): AccountSetup {
  const colon = value.indexOf(':')
  return colon < 0 ? { email: value, kind } : { email: value.slice(0, colon), name: value.slice(colon + 1), kind }
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      client: { type: 'string', multiple: true },
      account: { type: 'string', multiple: true },
      'work-account': { type: 'string', multiple: true },
      'access-token-lifetime': { type: 'string' }
    },
    strict: true
  })
  const accessTokenLifetimeSec = wholeNumberFlag(values['access-token-lifetime'], 'access-token-lifetime')
  const microsoft = await startMicrosoft({
    port: wholeNumberFlag(values.port, 'port', 65535) ?? DEFAULT_PORT,
    clients: (values.client ?? []).map(parseClient),
    accounts: [
      ...(values.account ?? []).map((value) => parseAccount(value, 'personal')),
      ...(values['work-account'] ?? []).map((value) => parseAccount(value, 'work'))
    ],
    ...(accessTokenLifetimeSec === undefined ? {} : { accessTokenLifetimeSec }),
    logger: {
      level: 'info',
      redact: LOG_REDACT,
      ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty' } } : {})
    }
  })
  process.stdout.write(`microsoft stand-in listening on ${microsoft.url} (discovery ${microsoft.discoveryUrl}, Graph ${microsoft.graphUrl}, control ${microsoft.url}/_control/), data in memory\n`)
  closeWithGrace({ delay: 5000 }, async ({ err }) => {
    if (err !== undefined) process.stderr.write(`microsoft stand-in stopping after error: ${err.message}\n`)
    await microsoft.close()
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
