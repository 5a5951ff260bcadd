// Runs the tap suite under c8 and ends with one plain summary line ("tests: N passed, N failed"),
// which any CI reader understands, while keeping tap's own output intact. c8 collects the
// coverage of every process the tests start and fails the run when it falls below the floors in
// .c8rc.json (which only go up).
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const child = spawn('npx', ['c8', '--check-coverage', 'tap', ...process.argv.slice(2)], { stdio: ['inherit', 'pipe', 'inherit'] })
const summaryPattern = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/
let summary: { total: number, pass: number, fail: number } | undefined

createInterface({ input: child.stdout }).on('line', (line) => {
  process.stdout.write(line + '\n')
  const match = summaryPattern.exec(line)
  if (match) {
    summary = { total: Number(match[1]), pass: Number(match[2] ?? 0), fail: Number(match[3] ?? 0) }
  }
})

child.on('close', (code) => {
  if (!summary || summary.total === 0) {
    process.stdout.write('tests: 0 passed, 1 failed (no test ran)\n')
    process.exit(1)
  }
  const failed = summary.fail > 0 ? summary.fail : (code === 0 ? 0 : 1)
  process.stdout.write(`tests: ${summary.pass} passed, ${failed} failed\n`)
  process.exit(code === 0 && failed === 0 ? 0 : 1)
})
