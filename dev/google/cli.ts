// npx tsx dev/google/cli.ts [--port 4010] [--client ID:SECRET:REDIRECT_URI[,REDIRECT_URI...]]...
//   [--account EMAIL[:Display Name]]... [--access-token-lifetime SECONDS]
import { parseAccount, readProviderFlags, runCli } from '../stand-in/cli.js'
import { LOG_REDACT, startGoogle } from './index.js'

const DEFAULT_PORT = 4010

runCli('google stand-in', async () => {
  const { accounts, ...flags } = readProviderFlags(DEFAULT_PORT, LOG_REDACT)
  const google = await startGoogle({ ...flags, accounts: (accounts['account'] ?? []).map(parseAccount) })
  process.stdout.write(`google stand-in listening on ${google.url} (discovery ${google.discoveryUrl}, control ${google.url}/_control/), data in memory\n`)
  return google
})
