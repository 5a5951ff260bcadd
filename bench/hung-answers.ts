// The shared measure of bench/hung-database.ts and bench/sync-hung-database.ts: each request once
// with the database up (after a warm-up), then once with its process stopped (SIGSTOP), printed
// against the healthy answer and the per-call deadline.
import type { ChildProcess } from 'node:child_process'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { DATABASE_CALL_DEADLINE_MS } from '../stores/database.js'

export type HungCase = [name: string, request: () => InjectOptions]

async function timed (inject: (request: InjectOptions) => Promise<LightMyRequestResponse>, request: InjectOptions): Promise<{ ms: number, status: number }> {
  const started = performance.now()
  const answer = await inject(request)
  return { ms: performance.now() - started, status: answer.statusCode }
}

/** Measures, prints, and resumes the database whatever happens. */
export async function printHungAnswers (title: string, cases: HungCase[], inject: (request: InjectOptions) => Promise<LightMyRequestResponse>, database: ChildProcess): Promise<void> {
  const healthy = new Map<string, { ms: number, status: number }>()
  for (const [name, request] of cases) {
    await timed(inject, request())
    healthy.set(name, await timed(inject, request()))
  }
  database.kill('SIGSTOP')
  console.log(`${title} (deadline per call ${DATABASE_CALL_DEADLINE_MS} ms):`)
  try {
    for (const [name, request] of cases) {
      const hung = await timed(inject, request())
      const base = healthy.get(name) ?? { ms: 1, status: 0 }
      console.log(`  ${name.padEnd(13)} up: ${base.status} in ${base.ms.toFixed(0)} ms; hung: ${hung.status} in ${hung.ms.toFixed(0)} ms ` +
        `(${(hung.ms / base.ms).toFixed(0)}x the healthy answer, ${(hung.ms / DATABASE_CALL_DEADLINE_MS).toFixed(2)}x the deadline)`)
    }
  } finally {
    database.kill('SIGCONT')
  }
}
