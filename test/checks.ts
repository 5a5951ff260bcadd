// The static checks of `npm test`: lint and both type checks, side by side (each keeps one core
// busy for most of a minute). Each one's output is printed whole when it ends; the run fails if
// any of them does.
import { spawn } from 'node:child_process'

const CHECKS: Array<[string, string[]]> = [
  ['lint', ['run', 'lint']],
  ['typecheck (backend, Sync, tests)', ['exec', '--', 'tsc', '--noEmit']],
  ['typecheck (web)', ['exec', '--', 'tsc', '--noEmit', '-p', 'web/tsconfig.json']]
]

async function check ([name, args]: [string, string[]]): Promise<boolean> {
  const began = Date.now()
  const child = spawn('npm', ['--silent', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  process.stdout.write(`# ${name}: ${code === 0 ? 'passed' : 'failed'} in ${Math.round((Date.now() - began) / 1000)} s\n${output}`)
  return code === 0
}

const results = await Promise.all(CHECKS.map(check))
process.exit(results.every(Boolean) ? 0 : 1)
