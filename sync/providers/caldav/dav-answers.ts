// A DAV answer's multistatus, parsed off the event loop. tsdav parses with xml-js, synchronously:
// a 1 MB answer held Sync's event loop about 300 ms, one of 10 MB (CALDAV_ANSWER_LIMIT_BYTES) about
// 1.5 s, so one server could stall every other user's requests. The answer is still fetched on the
// main thread (address guard, byte limit, origin pin, deadline: CalDavClient in dav-client.ts); its bytes then
// go to one long-lived worker thread, which runs tsdav's own davRequest over them and sends the
// DAVResponse[] back in pieces small enough to copy in a few milliseconds each, one piece per turn
// of the loop. Answers under INLINE_ANSWER_BYTES are parsed here at once, the same way.
//
// The result is tsdav's, with one difference: `raw`, which tsdav sets to the whole parsed document
// on every response, holds the multistatus without its responses (each response is its own entry
// already; the adapter reads only the sync-token there), or for an answer that is no multistatus
// the first 4,096 characters of its text, as tsdav keeps of an answer that is not XML. The whole
// document again would double what crosses the thread.
import type { Worker } from 'node:worker_threads'
import { davRequest, type DAVResponse } from 'tsdav'
import { ProviderAnswerTooLargeError } from '../buffered-fetch.js'
import { moduleWorker } from '../module-worker.js'

/** An answer as received: its status, its headers, its bytes. */
export interface DavAnswer {
  status: number
  headers: Array<[string, string]>
  body: Uint8Array
}

/** Answers smaller than this parse on the main thread: a few milliseconds, less than a round trip to the worker. */
const INLINE_ANSWER_BYTES = 64 * 1024

/**
 * The most XML elements an answer may hold; past it the answer fails before it is parsed, as one
 * past the byte limit does. The densest real answer within 10 MB, a listing of hrefs and etags,
 * holds six elements per resource at about 170 bytes each (some 370,000); xml-js holds each
 * element as an object, so this bounds the worker's memory (a flood of 760,000 empty elements
 * took it to 190 MB) and what comes back.
 */
const DAV_ELEMENT_LIMIT = 500_000

/**
 * Objects, arrays and strings per piece sent back: the main thread copies a piece in one go, a
 * few milliseconds at this size. A single response larger than a piece (a real one holds a few
 * dozen) fails the answer.
 */
const DAV_PIECE_NODES = 5_000

const MAX_RAW = 4096

/** Opening tags in `body` (`<` not followed by `/`, `!` or `?`; one in a CDATA section counts too), counted up to just past `limit`. */
function elementsOf (body: Uint8Array, limit: number): number {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  let count = 0
  for (let at = bytes.indexOf(0x3c); at !== -1 && count <= limit; at = bytes.indexOf(0x3c, at + 1)) {
    const next = bytes[at + 1]
    if (next !== 0x2f && next !== 0x21 && next !== 0x3f) count++
  }
  return count
}

/** Objects, arrays and strings in `value`, counted up to just past `limit`. */
function nodesOf (value: unknown, limit: number): number {
  let count = 0
  const pending: unknown[] = [value]
  while (pending.length > 0 && count <= limit) {
    const next = pending.pop()
    if (typeof next === 'string') count++
    else if (typeof next === 'object' && next !== null) {
      count++
      for (const child of Object.values(next)) pending.push(child)
    }
  }
  return count
}

/** What tsdav keeps of an answer that is not XML: at most MAX_RAW characters of its text. */
function textPrefix (body: Uint8Array): string {
  // A character takes at most 4 bytes: decoding 4 * MAX_RAW of them gives more than MAX_RAW characters.
  const text = new TextDecoder().decode(body.byteLength > 4 * MAX_RAW ? body.subarray(0, 4 * MAX_RAW) : body)
  return body.byteLength > 4 * MAX_RAW || text.length > MAX_RAW ? `${text.slice(0, MAX_RAW)}…` : text
}

/** `raw` as sent back (see the head of this file). */
function compactRaw (raw: unknown, body: Uint8Array): unknown {
  if (typeof raw === 'object' && raw !== null && 'multistatus' in raw) {
    const { multistatus, ...document } = raw as { multistatus: unknown }
    if (typeof multistatus !== 'object' || multistatus === null) return raw
    const { response: _responses, ...rest } = multistatus as Record<string, unknown>
    return { ...document, multistatus: rest }
  }
  return textPrefix(body)
}

/** A parsed answer: `raw` once, and the responses (each with `raw` unset) in pieces of at most DAV_PIECE_NODES. */
export interface ParsedDavAnswer {
  raw: unknown
  pieces: DAVResponse[][]
}

/** NULL_BODY_STATUSES of buffered-fetch.ts: their Response cannot be built with a body, and has none. */
function responseOf (answer: DavAnswer): Response {
  return new Response(answer.body.byteLength === 0 ? null : answer.body, { status: answer.status, headers: answer.headers })
}

/** tsdav's davRequest over an answer already received; throws ProviderAnswerTooLargeError past the limits above. */
export async function parseDavAnswer (answer: DavAnswer): Promise<ParsedDavAnswer> {
  if (elementsOf(answer.body, DAV_ELEMENT_LIMIT) > DAV_ELEMENT_LIMIT) {
    throw new ProviderAnswerTooLargeError(`the DAV answer holds more than ${DAV_ELEMENT_LIMIT} XML elements`)
  }
  // convertIncoming: false sends no body; the fetch answers what the server did.
  const responses = await davRequest({ url: 'about:blank', init: { method: 'PROPFIND', body: undefined }, convertIncoming: false, fetch: async () => responseOf(answer) })
  const raw = compactRaw(responses[0]?.raw, answer.body)
  let nodes = nodesOf(raw, DAV_PIECE_NODES)
  if (nodes > DAV_PIECE_NODES) throw new ProviderAnswerTooLargeError(`the DAV answer's multistatus holds more than ${DAV_PIECE_NODES} values besides its responses`)
  const pieces: DAVResponse[][] = []
  let piece: DAVResponse[] = []
  for (const response of responses) {
    // Unset, not deleted: the key keeps its place, and the main thread sets it again.
    response.raw = undefined
    const cost = nodesOf(response, DAV_PIECE_NODES)
    if (cost > DAV_PIECE_NODES) throw new ProviderAnswerTooLargeError(`a response of the DAV answer holds more than ${DAV_PIECE_NODES} values`)
    if (nodes + cost > DAV_PIECE_NODES) {
      pieces.push(piece)
      piece = []
      nodes = 0
    }
    piece.push(response)
    nodes += cost
  }
  pieces.push(piece)
  return { raw, pieces }
}

/** Messages to the worker: an answer to parse (its bytes transferred), or "the next piece, please". */
export type ToDavWorker = { id: number, answer: DavAnswer } | { id: number, next: true }
/** Messages from the worker: a piece (with `raw` on the first), or the error that ended the parse. */
export type FromDavWorker =
  | { id: number, raw?: unknown, responses: DAVResponse[], done: boolean }
  | { id: number, error: { name: string, message: string } }

interface Job {
  resolve: (responses: DAVResponse[]) => void
  reject: (error: Error) => void
  raw: unknown
  responses: DAVResponse[]
}

/** The worker's module: the compiled .js next to this one, or under tsx (development, tests, benches) the .ts. */
function startWorker (): Worker {
  // A backstop only: the element limit keeps a parse far below it. Past it the worker ends, its
  // answers fail, and the next answer starts another.
  return moduleWorker(import.meta.url, './dav-answers-worker', { name: 'dav-answers', resourceLimits: { maxOldGenerationSizeMb: 512 } })
}

/**
 * The process's one parsing worker, started with its first large answer. It never keeps the
 * process alive when idle (unref'd), and is ended and replaced when it fails.
 */
class DavAnswerWorker {
  #worker: Worker | null = null
  readonly #jobs = new Map<number, Job>()
  #ids = 0

  async parse (answer: DavAnswer): Promise<DAVResponse[]> {
    const worker = this.#running()
    const id = ++this.#ids
    const done = new Promise<DAVResponse[]>((resolve, reject) => this.#jobs.set(id, { resolve, reject, raw: undefined, responses: [] }))
    worker.ref()
    const message: ToDavWorker = { id, answer }
    worker.postMessage(message, [answer.body.buffer as ArrayBuffer])
    return await done
  }

  #running (): Worker {
    if (this.#worker !== null) return this.#worker
    const worker = startWorker()
    worker.unref()
    worker.on('message', (message: FromDavWorker) => this.#receive(worker, message))
    worker.on('error', (error) => this.#fail(worker, error))
    worker.on('exit', (code) => this.#fail(worker, new Error(`the DAV answer worker ended (exit code ${code})`)))
    this.#worker = worker
    return worker
  }

  #receive (worker: Worker, message: FromDavWorker): void {
    const job = this.#jobs.get(message.id)
    if (job === undefined) return
    if ('error' in message) {
      this.#settle(worker, message.id)
      const error = message.error.name === 'ProviderAnswerTooLargeError' ? new ProviderAnswerTooLargeError(message.error.message) : new Error(message.error.message)
      job.reject(error)
      return
    }
    if ('raw' in message) job.raw = message.raw
    for (const response of message.responses) {
      response.raw = job.raw
      job.responses.push(response)
    }
    if (message.done) {
      this.#settle(worker, message.id)
      job.resolve(job.responses)
      return
    }
    // The next piece is asked for after this turn, so timers and I/O run between two pieces.
    setImmediate(() => {
      if (this.#jobs.has(message.id)) worker.postMessage({ id: message.id, next: true } satisfies ToDavWorker)
    })
  }

  #settle (worker: Worker, id: number): void {
    this.#jobs.delete(id)
    if (this.#jobs.size === 0) worker.unref()
  }

  #fail (worker: Worker, error: Error): void {
    if (this.#worker !== worker) return
    this.#worker = null
    worker.terminate().catch(() => {})
    const jobs = [...this.#jobs.values()]
    this.#jobs.clear()
    for (const job of jobs) job.reject(error)
  }
}

const worker = new DavAnswerWorker()

/**
 * The answer's bytes, in a buffer of their own (so it can be moved to the worker). A buffered
 * answer's body is one chunk already, taken as it is: copying 10 MB again (what arrayBuffer()
 * does) held the loop tens of milliseconds on a busy machine.
 */
async function bytesOf (response: Response): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  for await (const chunk of response.body) chunks.push(chunk)
  const [only] = chunks
  if (chunks.length === 1 && only !== undefined && only.byteOffset === 0 && only.byteLength === only.buffer.byteLength) return only
  return new Uint8Array(Buffer.concat(chunks))
}

/** The answer's responses as tsdav's davRequest gives them (see the head of this file). */
export async function davResponsesOf (response: Response): Promise<DAVResponse[]> {
  const body = await bytesOf(response)
  const answer: DavAnswer = { status: response.status, headers: [...response.headers], body }
  if (body.byteLength >= INLINE_ANSWER_BYTES) return await worker.parse(answer)
  const { raw, pieces } = await parseDavAnswer(answer)
  const responses = pieces.flat()
  for (const one of responses) one.raw = raw
  return responses
}
