// A DAV answer's multistatus, parsed off the event loop. tsdav parses with xml-js, synchronously:
// a 1 MB answer held Sync's event loop about 300 ms, one of 10 MB (CALDAV_ANSWER_LIMIT_BYTES) about
// 1.5 s, so one server could stall every other user's requests. The answer is still fetched on the
// main thread (address guard, byte limit, origin pin, deadline: CalDavClient in dav-client.ts); its bytes then
// go to one long-lived worker thread, which runs tsdav's own davRequest over them and sends the
// DAVResponse[] back in pieces small enough to copy in a few milliseconds each, one piece per turn
// of the loop. Answers under INLINE_ANSWER_BYTES are parsed here at once, the same way.
//
// A large multistatus is parsed in parts (multistatusParts): its first responses come back, and
// the caller starts on them, while the later ones are still being parsed. Each part is a
// multistatus of its own that tsdav parses as it parses the whole; the responses are the same, in
// the same order.
//
// The result is tsdav's, with one difference: `raw`, which tsdav sets to the whole parsed document
// on every response, holds the multistatus without its responses (each response is its own entry
// already; the adapter reads only the sync-token there), or for an answer that is no multistatus
// the first 4,096 characters of its text, as tsdav keeps of an answer that is not XML. The whole
// document again would double what crosses the thread.
import type { Worker } from 'node:worker_threads'
import sax from 'sax'
import { davRequest, type DAVResponse } from 'tsdav'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import { eventsOfResource } from '../../lib/providers/caldav-mapping.js'
import { ProviderAnswerTooLargeError } from '../buffered-fetch.js'
import { moduleWorker } from '../module-worker.js'

/**
 * A prop's text as xml-js (through tsdav) left it: a string, a number, or an element with `_text`
 * or `_cdata` (iCloud, among others, sends calendar-data as a CDATA section; data holding `]]>`
 * comes in two sections, an array), or both, joined. A prop given twice (an array) has no one text.
 */
export function text (value: unknown): string | null {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (typeof value !== 'object' || value === null || !('_text' in value || '_cdata' in value)) return null
  const { _text: plain, _cdata: cdata } = value as { _text?: unknown, _cdata?: unknown }
  const parts = [plain, cdata].flatMap((part) => part === undefined ? [] : [part].flat())
  return parts.every((part) => ['string', 'number', 'boolean'].includes(typeof part)) ? parts.map(String).join('') : null
}

/**
 * A calendar's answer whose first `first` resources (those with calendar-data, in order) are mapped
 * to events as it is parsed (eventsOfResource, caldav-mapping.ts): the adapter has the events of
 * its first pages without parsing their iCalendar on the event loop.
 */
export interface EventsOfAnswer {
  calendarUrl: string
  timeZone: string
  first: number
}

/** A response as tsdav gives it, with its resource's events when they were mapped (EventsOfAnswer). */
export type DavResponse = DAVResponse & { events?: ProviderEvent[] }

/**
 * The resource a response of a calendar's answer names: its path (the href against the
 * calendar's URL), its etag and its iCalendar text (null when the answer left it out); null for a
 * response that names none (no href, or 404). Throws for an href that is no URL.
 */
export function resourceOfResponse (response: DavResponse, calendarUrl: string): { href: string, etag: string | null, ics: string | null } | null {
  if (response.href === undefined || response.status === 404) return null
  const props = (response.props ?? {}) as Record<string, unknown>
  return { href: new URL(response.href, calendarUrl).pathname, etag: text(props['getetag']), ics: text(props['calendarData']) }
}

/** Maps the resources of `responses` to events, up to `events.first` of them over the calls; answers how many it mapped. */
function mapEvents (responses: DavResponse[], events: EventsOfAnswer, mappedBefore: number): number {
  let mapped = mappedBefore
  for (const response of responses) {
    if (mapped >= events.first) break
    const resource = resourceOfResponse(response, events.calendarUrl)
    if (resource === null || resource.ics === null) continue
    response.events = eventsOfResource(resource.href, resource.ics, resource.etag, events.timeZone)
    mapped++
  }
  return mapped
}

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
function textPrefix (body: Uint8Array | string): string {
  if (typeof body === 'string') return body.length > MAX_RAW ? `${body.slice(0, MAX_RAW)}…` : body
  // A character takes at most 4 bytes: decoding 4 * MAX_RAW of them gives more than MAX_RAW characters.
  const text = new TextDecoder().decode(body.byteLength > 4 * MAX_RAW ? body.subarray(0, 4 * MAX_RAW) : body)
  return body.byteLength > 4 * MAX_RAW || text.length > MAX_RAW ? `${text.slice(0, MAX_RAW)}…` : text
}

/** `raw` as sent back (see the head of this file). */
function compactRaw (raw: unknown, body: Uint8Array | string): unknown {
  if (typeof raw === 'object' && raw !== null && 'multistatus' in raw) {
    const { multistatus, ...document } = raw as { multistatus: unknown }
    if (typeof multistatus !== 'object' || multistatus === null) return raw
    const { response: _responses, ...rest } = multistatus as Record<string, unknown>
    return { ...document, multistatus: rest }
  }
  return textPrefix(body)
}

/** NULL_BODY_STATUSES of buffered-fetch.ts: their Response cannot be built with a body, and has none. */
function responseOf (status: number, headers: Array<[string, string]>, body: Uint8Array | string): Response {
  const empty = typeof body === 'string' ? body.length === 0 : body.byteLength === 0
  return new Response(empty ? null : body, { status, headers })
}

/** Characters of responses per part of a large multistatus: parsed in a few milliseconds. */
const PART_CHARS = 64 * 1024
/**
 * The most characters before a multistatus's first child that are repeated in each part: a
 * declaration and a start tag with its namespaces take a few hundred. A longer one (a comment, a
 * start tag padded with attributes) is parsed whole, so no server can multiply its answer by the
 * number of parts.
 */
const PART_HEAD_CHARS = 16 * 1024

/** An element's name as tsdav keys it: without its prefix, camel-cased (`response-` is `response`). */
const tsdavName = (name: string) => name.replace(/^.+:/, '').replace(/[-_]+(\w?)/g, (_match, next: string) => next.toUpperCase())

/** A DAV answer that ends before its root element does: cut off, and whatever of it parses is not the server's answer. */
class DavAnswerCutOffError extends Error {
  override name = 'DavAnswerCutOffError'
}

/**
 * A multistatus cut between its responses: each part is everything before the first response
 * (the prolog and the root's start tag, which declares the prefixes), a run of whole responses
 * and the root's end tag; `rest` is the multistatus without any response (its sync-token, its
 * description), parsed last for `raw`. Responses and the multistatus are known by the names
 * tsdav gives them. Null for anything else (not well-formed, not one multistatus, no response,
 * more than PART_HEAD_CHARS before the first child), which is parsed whole, as leniently as tsdav
 * parses it. Throws DavAnswerCutOffError for an answer whose root element never ends, of which
 * tsdav would read what came as all there is.
 */
function multistatusParts (text: string): { parts: string[], rest: string } | null {
  const parser = sax.parser(true, { position: true })
  const responses: Array<[number, number]> = []
  let depth = 0
  let roots = 0
  let rootName = ''
  let bodyStart = 0
  let bodyEnd = -1
  let childStart = 0
  let childIsResponse = false
  let wellFormed = true
  parser.onerror = () => {
    wellFormed = false
    // Read on, as xml-js does, to tell whether the root element ends.
    parser.resume()
  }
  parser.onopentag = (tag) => {
    if (depth === 0) {
      roots++
      rootName = tag.name
      bodyStart = parser.position
    } else if (depth === 1) {
      childStart = parser.startTagPosition - 1
      childIsResponse = tsdavName(tag.name) === 'response'
    }
    depth++
  }
  parser.onclosetag = () => {
    depth--
    if (depth === 1 && childIsResponse) responses.push([childStart, parser.position])
    else if (depth === 0) bodyEnd = parser.startTagPosition - 1
  }
  parser.write(text).close()
  if (roots === 0 || bodyEnd === -1 || depth > 0) throw new DavAnswerCutOffError('the DAV answer ends before its root element does')
  if (!wellFormed || roots !== 1 || tsdavName(rootName) !== 'multistatus' || responses.length === 0 || bodyStart > PART_HEAD_CHARS) return null
  const head = text.slice(0, bodyStart)
  const tail = `</${rootName}>`
  const parts: string[] = []
  let rest = head
  let restFrom = bodyStart
  let partStart = -1
  let partEnd = -1
  for (const [start, end] of responses) {
    if (partStart === -1) partStart = start
    partEnd = end
    rest += text.slice(restFrom, start)
    restFrom = end
    if (partEnd - partStart >= PART_CHARS) {
      parts.push(head + text.slice(partStart, partEnd) + tail)
      partStart = -1
    }
  }
  if (partStart !== -1) parts.push(head + text.slice(partStart, partEnd) + tail)
  return { parts, rest: rest + text.slice(restFrom, bodyEnd) + tail }
}

/** tsdav's davRequest over a body: `raw` (see the head of this file), and the responses in pieces of at most DAV_PIECE_NODES. */
async function parsedWhole (status: number, headers: Array<[string, string]>, body: Uint8Array | string): Promise<{ raw: unknown, pieces: DAVResponse[][] }> {
  // convertIncoming: false sends no body; the fetch answers what the server did.
  const responses = await davRequest({ url: 'about:blank', init: { method: 'PROPFIND', body: undefined }, convertIncoming: false, fetch: async () => responseOf(status, headers, body) })
  const raw = compactRaw(responses[0]?.raw, body)
  if (nodesOf(raw, DAV_PIECE_NODES) > DAV_PIECE_NODES) throw new ProviderAnswerTooLargeError(`the DAV answer's multistatus holds more than ${DAV_PIECE_NODES} values besides its responses`)
  const pieces: DAVResponse[][] = []
  let piece: DAVResponse[] = []
  let nodes = 0
  for (const response of responses) {
    // Unset, not deleted: the key keeps its place, and the main thread sets it again.
    response.raw = undefined
    const cost = nodesOf(response, DAV_PIECE_NODES)
    if (cost > DAV_PIECE_NODES) throw new ProviderAnswerTooLargeError(`a response of the DAV answer holds more than ${DAV_PIECE_NODES} values`)
    if (nodes + cost > DAV_PIECE_NODES && piece.length > 0) {
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

/**
 * tsdav's davRequest over an answer already received, a large multistatus in parts (see the head
 * of this file): yields the pieces of each part in turn, the first resources mapped to events
 * with `events`, and returns `raw`. Throws ProviderAnswerTooLargeError past the limits above,
 * DavAnswerCutOffError for XML cut off.
 */
export async function * parseDavAnswer (answer: DavAnswer, events?: EventsOfAnswer): AsyncGenerator<DavResponse[][], unknown> {
  if (elementsOf(answer.body, DAV_ELEMENT_LIMIT) > DAV_ELEMENT_LIMIT) {
    throw new ProviderAnswerTooLargeError(`the DAV answer holds more than ${DAV_ELEMENT_LIMIT} XML elements`)
  }
  const { status, headers } = answer
  // What tsdav parses as XML: a success whose type says XML (it keeps the text of anything else).
  const xml = status >= 200 && status < 300 && headers.some(([name, value]) => name.toLowerCase() === 'content-type' && value.toLowerCase().includes('xml'))
  const split = xml && answer.body.byteLength > 0 ? multistatusParts(new TextDecoder().decode(answer.body)) : null
  let mapped = 0
  const withEvents = (pieces: DavResponse[][]): DavResponse[][] => {
    if (events !== undefined) for (const piece of pieces) mapped = mapEvents(piece, events, mapped)
    return pieces
  }
  if (split === null || split.parts.length === 1) {
    const { raw, pieces } = await parsedWhole(status, headers, answer.body)
    yield withEvents(pieces)
    return raw
  }
  for (const part of split.parts) yield withEvents((await parsedWhole(status, headers, part)).pieces)
  return (await parsedWhole(status, headers, split.rest)).raw
}

/** Messages to the worker: an answer to parse (its bytes transferred), "the next piece, please", or "no more of this one". */
export type ToDavWorker = { id: number, answer: DavAnswer, events?: EventsOfAnswer } | { id: number, next: true } | { id: number, cancel: true }
/** Messages from the worker: a piece (the last with `raw`), or the error that ended the parse. */
export type FromDavWorker =
  | { id: number, responses: DavResponse[], done: false }
  | { id: number, responses: DavResponse[], done: true, raw: unknown }
  | { id: number, error: { name: string, message: string } }

/** Called with each piece of responses as it is parsed. */
export type OnDavResponses = (responses: DavResponse[]) => void

interface Job {
  resolve: (responses: DavResponse[]) => void
  reject: (error: Error) => void
  onResponses: OnDavResponses | undefined
  responses: DavResponse[]
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

  async parse (answer: DavAnswer, options: ParseOptions): Promise<DavResponse[]> {
    const worker = this.#running()
    const id = ++this.#ids
    const done = new Promise<DavResponse[]>((resolve, reject) => this.#jobs.set(id, { resolve, reject, onResponses: options.onResponses, responses: [] }))
    worker.ref()
    const message: ToDavWorker = { id, answer, ...(options.events === undefined ? {} : { events: options.events }) }
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
      const { name, message: text } = message.error
      const error = name === 'ProviderAnswerTooLargeError' ? new ProviderAnswerTooLargeError(text) : name === 'DavAnswerCutOffError' ? new DavAnswerCutOffError(text) : new Error(text)
      job.reject(error)
      return
    }
    job.responses.push(...message.responses)
    try {
      if (message.responses.length > 0) job.onResponses?.(message.responses)
    } catch (error) {
      this.#settle(worker, message.id)
      // The worker would otherwise keep the rest of the answer, waiting to be asked for it.
      if (!message.done) worker.postMessage({ id: message.id, cancel: true } satisfies ToDavWorker)
      job.reject(error instanceof Error ? error : new Error(String(error)))
      return
    }
    if (message.done) {
      this.#settle(worker, message.id)
      for (const response of job.responses) response.raw = message.raw
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

interface ParseOptions {
  /** Called with each piece of responses as it is parsed, in order, before the answer is whole. */
  onResponses?: OnDavResponses
  events?: EventsOfAnswer
}

/** The answer's responses as tsdav's davRequest gives them (see the head of this file). */
export async function davResponsesOf (response: Response, options: ParseOptions = {}): Promise<DavResponse[]> {
  const { onResponses, events } = options
  const body = await bytesOf(response)
  const answer: DavAnswer = { status: response.status, headers: [...response.headers], body }
  if (body.byteLength >= INLINE_ANSWER_BYTES) return await worker.parse(answer, options)
  const responses: DavResponse[] = []
  const parts = parseDavAnswer(answer, events)
  for (let step = await parts.next(); ; step = await parts.next()) {
    if (step.done === true) {
      for (const one of responses) one.raw = step.value
      return responses
    }
    for (const piece of step.value) {
      responses.push(...piece)
      if (piece.length > 0) onResponses?.(piece)
    }
  }
}
