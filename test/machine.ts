// The first step of `npm test`: the suite drives a real Chromium and a real CalDAV server
// (Radicale), and checks the alert rules with Prometheus' own promtool, which come from the
// operating system, not from npm. On a fresh Debian machine where
// this runs as root it installs them; anywhere else it stops at once with the one command to run,
// rather than letting the browser tests fail one by one or the CalDAV tests skip.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { CHROMIUM } from './web/chromium.js'
import { radicaleMissing } from '../dev/radicale.js'

const missing: string[] = []
if (!existsSync(CHROMIUM)) missing.push('chromium')
if (radicaleMissing() !== null) missing.push('radicale')
// Only its promtool is used: none of the server's recommended extras (exporters, web libraries).
const lean: string[] = []
if (spawnSync('sh', ['-c', 'command -v promtool']).status !== 0) lean.push('prometheus')

function run (command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  return result.status === 0
}

if (missing.length + lean.length > 0) {
  const all = [...missing, ...lean]
  const canInstall = process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get']).status === 0 && process.env.TEST_NO_INSTALL === undefined
  process.stdout.write(`# the tests need Debian's ${all.join(' and ')}${canInstall ? ': installing' : ''}\n`)
  const installed = canInstall && run('apt-get', ['update']) &&
    (missing.length === 0 || run('apt-get', ['install', '-y', ...missing])) &&
    (lean.length === 0 || run('apt-get', ['install', '-y', '--no-install-recommends', ...lean]))
  if (!installed) {
    process.stderr.write(`Install them first, then run npm test again:\n  sudo apt-get update && sudo apt-get install -y ${all.join(' ')}\n` +
      (missing.includes('chromium') ? 'or point CHROMIUM_PATH at a Chromium you have.\n' : ''))
    process.exit(1)
  }
}
