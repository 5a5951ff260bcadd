// `npm run bench`: every benchmark in this folder, one after another (each prints its own figures).
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(new URL('.', import.meta.url))
const only = process.argv.slice(2)
const benches = readdirSync(here)
  .filter((file) => file.endsWith('.ts') && !['run.ts', 'load.ts', 'sync-for-bench.ts', 'health-target.ts', 'backend-process.ts', 'hung-answers.ts'].includes(file))
  .filter((file) => only.length === 0 || only.some((name) => file.startsWith(name)))

for (const file of benches) {
  process.stdout.write(`\n== ${file}\n`)
  spawnSync(process.execPath, ['--import', 'tsx', `${here}${file}`], { stdio: 'inherit' })
}
