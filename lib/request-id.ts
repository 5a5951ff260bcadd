// One request id from the browser to the provider and back: the backend names each request (or
// takes the id a client sent), answers it in X-Request-Id, and sends it on every call it makes to
// Sync, including the outbox's later delivery of a write's report; Sync takes it as its own
// request's id, keeps it with the job it queues and logs it with the job's work, and sends it
// back on the pages it hands the backend. So one grep of both services' logs follows a write.
//
// The id of the work under way is kept in an AsyncLocalStorage, so the clients find it without
// every function on the way passing it along.
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

export const REQUEST_ID_HEADER = 'x-request-id'

/** Letters, digits, `-`, `_`, `.` and `:`, 8 to 64 of them: what a log line and a header carry safely. */
const ACCEPTED_ID = /^[A-Za-z0-9._:-]{8,64}$/

/** A fresh id: 16 random bytes, readable in a log and unique across processes. */
function newRequestId (): string {
  return randomBytes(12).toString('base64url')
}

/** The id a caller sent, when it is one this service accepts; else undefined. */
function acceptedRequestId (value: unknown): string | undefined {
  return typeof value === 'string' && ACCEPTED_ID.test(value) ? value : undefined
}

/** Fastify's genReqId: the caller's id when acceptable, else a fresh one. */
export function requestIdOf (request: IncomingMessage): string {
  return acceptedRequestId(request.headers[REQUEST_ID_HEADER]) ?? newRequestId()
}

const current = new AsyncLocalStorage<string>()

/** Runs `work` as part of the request (or queued work) named `requestId`. */
export function withRequestId<T> (requestId: string | undefined, work: () => T): T {
  return requestId === undefined ? work() : current.run(requestId, work)
}

/** The id of the request or queued work under way; undefined outside any. */
export function currentRequestId (): string | undefined {
  return current.getStore()
}

/** The header to send on a call made for the work under way (none outside any). */
export function requestIdHeaders (): Record<string, string> {
  const requestId = current.getStore()
  return requestId === undefined ? {} : { [REQUEST_ID_HEADER]: requestId }
}
