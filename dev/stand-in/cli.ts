// The command line of a provider stand-in: the flags they share (--port, --client, --account,
// --access-token-lifetime), a pretty log on a terminal, and a graceful stop.
import { parseArgs } from 'node:util'
import closeWithGrace from 'close-with-grace'
import { wholeNumberFlag } from './index.js'

export interface ClientFlag {
  clientId: string
  clientSecret: string
  redirectUris: string[]
}

/** `--client ID:SECRET:REDIRECT_URI[,REDIRECT_URI...]` */
export function parseClient (value: string): ClientFlag {
  const first = value.indexOf(':')
  const second = value.indexOf(':', first + 1)
  if (first <= 0 || second <= first + 1) throw new Error(`--client must be ID:SECRET:REDIRECT_URI[,REDIRECT_URI...], got "${value}"`)
  const redirectUris = value.slice(second + 1).split(',').filter((uri) => uri !== '')
  if (redirectUris.length === 0) throw new Error(`--client needs at least one redirect URI: "${value}"`)
  return { clientId: value.slice(0, first), clientSecret: value.slice(first + 1, second), redirectUris }
}

/** `--account EMAIL[:Display Name]` */
export function parseAccount (value: string): { email: string, name?: string } {
  const colon = value.indexOf(':')
  return colon < 0 ? { email: value } : { email: value.slice(0, colon), name: value.slice(colon + 1) }
}

export interface ProviderFlags {
  port: number
  clients: ClientFlag[]
  /** Every `--account`, and every value of the extra account flags by flag name. */
  accounts: Record<string, string[]>
  accessTokenLifetimeSec?: number
  logger: { level: string, redact: string[], transport?: { target: string } }
}

/** Reads the process's arguments; `accountFlags` names the flags that each add an account (`account` and a provider's own). */
export function readProviderFlags (defaultPort: number, redact: string[], accountFlags: readonly string[] = ['account']): ProviderFlags {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      client: { type: 'string', multiple: true },
      ...Object.fromEntries(accountFlags.map((flag) => [flag, { type: 'string', multiple: true }] as const)),
      'access-token-lifetime': { type: 'string' }
    },
    strict: true
  })
  const flag = (name: string): unknown => (values as Record<string, unknown>)[name]
  const accessTokenLifetimeSec = wholeNumberFlag(flag('access-token-lifetime') as string | undefined, 'access-token-lifetime')
  return {
    port: wholeNumberFlag(flag('port') as string | undefined, 'port', 65535) ?? defaultPort,
    clients: ((flag('client') ?? []) as string[]).map(parseClient),
    accounts: Object.fromEntries(accountFlags.map((name) => [name, (flag(name) ?? []) as string[]])),
    ...(accessTokenLifetimeSec === undefined ? {} : { accessTokenLifetimeSec }),
    logger: {
      level: 'info',
      redact,
      ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty' } } : {})
    }
  }
}

/** Runs `main`; a failure to start is one line on stderr and exit code 1. */
export function runCli (what: string, main: () => Promise<{ close: () => Promise<void> }>): void {
  main().then((standIn) => {
    closeWithGrace({ delay: 5000 }, async ({ err }) => {
      if (err !== undefined) process.stderr.write(`${what} stopping after error: ${err.message}\n`)
      await standIn.close()
    })
  }, (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
