// Runs the tap suite under c8 and ends with one plain summary line ("tests: N passed, N failed"),
// which any CI reader understands, while keeping tap's own output intact. c8 collects the
// coverage of every process the tests start; the report afterwards fails the run when it falls
// below the floors in .c8rc.json (which only go up).
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { dropMinorityCompilations } from './coverage-variants.js'

/** The heap c8 merges the suite's coverage in (the machine has 24 GiB; the default stops near 4). */
const COVERAGE_HEAP_MB = 16_384

// c8 reads every process's coverage (about 3 GB of V8 JSON for the whole suite) into one heap when
// it merges, past Node's default limit; its own process gets room for it (the tests' processes
// keep their defaults).
const C8 = [`--max-old-space-size=${COVERAGE_HEAP_MB}`, fileURLToPath(import.meta.resolve('c8/bin/c8.js'))]
const child = spawn(process.execPath, [...C8, '--check-coverage=false', '--reporter=none', 'tap', ...process.argv.slice(2)], { stdio: ['inherit', 'pipe', 'inherit'] })
const summaryPattern = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/
let summary: { total: number, pass: number, fail: number } | undefined

createInterface({ input: child.stdout }).on('line', (line) => {
  process.stdout.write(line + '\n')
  const match = summaryPattern.exec(line)
  if (match) {
    summary = { total: Number(match[1]), pass: Number(match[2] ?? 0), fail: Number(match[3] ?? 0) }
  }
})

async function coverageReport (): Promise<number> {
  const { 'temp-directory': directory } = JSON.parse(await readFile('.c8rc.json', 'utf8')) as { 'temp-directory': string }
  for (const [url, processes] of await dropMinorityCompilations(directory)) {
    process.stdout.write(`# coverage: ${processes} process(es) compiled ${url} differently; their coverage of it is left out\n`)
  }
  const report = spawn(process.execPath, [...C8, 'report'], { stdio: 'inherit' })
  return await new Promise((resolve) => report.on('close', (code) => { resolve(code ?? 1) }))
}

child.on('close', (code) => {
  if (!summary || summary.total === 0) {
    process.stdout.write('tests: 0 passed, 1 failed (no test ran)\n')
    process.exit(1)
  }
  const { pass, fail } = summary
  coverageReport().then((coverage) => {
    const failed = fail > 0 ? fail : (code === 0 && coverage === 0 ? 0 : 1)
    process.stdout.write(`tests: ${pass} passed, ${failed} failed\n`)
    process.exit(failed === 0 ? 0 : 1)
  }).catch((error: unknown) => {
    process.stdout.write(`coverage report failed: ${String(error)}\ntests: ${pass} passed, 1 failed\n`)
    process.exit(1)
  })
})
