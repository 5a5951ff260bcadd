// npx tsx dev/microsoft/cli.ts [--port 4020] [--client ID:SECRET:REDIRECT_URI[,REDIRECT_URI...]]...
//   [--account EMAIL[:Display Name]]... [--work-account EMAIL[:Display Name]]... [--access-token-lifetime SECONDS]
import { parseAccount, readProviderFlags, runCli } from '../stand-in/cli.js'
import { LOG_REDACT, startMicrosoft } from './index.js'

const DEFAULT_PORT = 4020

runCli('microsoft stand-in', async () => {
  const { accounts, ...flags } = readProviderFlags(DEFAULT_PORT, LOG_REDACT, ['account', 'work-account'])
  const microsoft = await startMicrosoft({
    ...flags,
    accounts: [
      ...(accounts['account'] ?? []).map((value) => ({ ...parseAccount(value), kind: 'personal' as const })),
      ...(accounts['work-account'] ?? []).map((value) => ({ ...parseAccount(value), kind: 'work' as const }))
    ]
  })
  process.stdout.write(`microsoft stand-in listening on ${microsoft.url} (discovery ${microsoft.discoveryUrl}, Graph ${microsoft.graphUrl}, control ${microsoft.url}/_control/), data in memory\n`)
  return microsoft
})
