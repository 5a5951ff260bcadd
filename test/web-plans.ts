// The web client's own requests for an edit: the plan its dialog makes (web/src/lib/series-edit.ts
// planEdit) turned into requests as its queue sends them (web/src/lib/pending-writes.ts stepsOf).
import type { FastifyInstance } from 'fastify'
import type { planEdit } from '../web/src/lib/series-edit.js'
import { stepsOf } from '../web/src/lib/pending-writes.js'

/** Sends a plan's requests in order, as the web client's queue does, stopping at the first refusal; the statuses it met. */
export async function sendPlan (app: FastifyInstance, headers: Record<string, string>, plan: ReturnType<typeof planEdit>): Promise<number[]> {
  const statuses: number[] = []
  for (const step of stepsOf({ kind: 'plan', plan })) {
    const query = step.query === undefined ? '' : `?${new URLSearchParams(step.query).toString()}`
    const answer = await app.inject({ method: step.method, url: `/api${step.path}${query}`, headers, ...(step.body === undefined ? {} : { payload: step.body }) })
    statuses.push(answer.statusCode)
    if (answer.statusCode !== 204) break
  }
  return statuses
}
