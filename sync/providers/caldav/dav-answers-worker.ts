// The worker thread of dav-answers.ts: parses each answer it is sent with tsdav, a part at a time,
// and sends the responses back one piece at a time, each when the main thread asks for it. Parts
// are parsed one per turn of this thread's loop, so an ask is heard between two parts and the
// first pieces go back while the later parts are still being parsed.
import { parentPort } from 'node:worker_threads'
import { parseDavAnswer, type DavResponse, type FromDavWorker, type ToDavWorker } from './dav-answers.js'

if (parentPort === null) throw new Error('dav-answers-worker.ts runs as a worker thread only')
const port = parentPort

/** By answer: the pieces parsed and not yet sent, `raw` once every part is parsed, and whether a piece is owed. */
const parsing = new Map<number, { ready: DavResponse[][], done: { raw: unknown } | null, asked: boolean }>()

/** Sends the next piece, or owes it until one is parsed. */
function send (id: number): void {
  const entry = parsing.get(id)
  if (entry === undefined) return
  const responses = entry.ready.shift()
  if (responses === undefined && entry.done === null) {
    entry.asked = true
    return
  }
  entry.asked = false
  if (entry.done !== null && entry.ready.length === 0) {
    parsing.delete(id)
    port.postMessage({ id, responses: responses ?? [], done: true, raw: entry.done.raw } satisfies FromDavWorker)
  } else {
    port.postMessage({ id, responses: responses ?? [], done: false } satisfies FromDavWorker)
  }
}

async function parse (id: number, parts: AsyncGenerator<DavResponse[][], unknown>): Promise<void> {
  // The first piece is owed from the start.
  const entry = { ready: [] as DavResponse[][], done: null as { raw: unknown } | null, asked: true }
  parsing.set(id, entry)
  for (;;) {
    const step = await parts.next()
    if (step.done === true) entry.done = { raw: step.value }
    else entry.ready.push(...step.value)
    if (entry.asked) send(id)
    // Done, or no longer wanted (cancelled): the rest is not parsed.
    if (step.done === true || parsing.get(id) !== entry) return
    await new Promise((resolve) => setImmediate(resolve))
  }
}

port.on('message', (message: ToDavWorker) => {
  if ('next' in message) {
    send(message.id)
    return
  }
  if ('cancel' in message) {
    parsing.delete(message.id)
    return
  }
  parse(message.id, parseDavAnswer(message.answer, message.events)).catch((error: unknown) => {
    parsing.delete(message.id)
    const failure = error instanceof Error ? { name: error.name, message: error.message } : { name: 'Error', message: String(error) }
    port.postMessage({ id: message.id, error: failure } satisfies FromDavWorker)
  })
})
