// The worker thread of dav-answers.ts: parses each answer it is sent with tsdav, and sends the
// responses back one piece at a time, each when the main thread asks for it.
import { parentPort } from 'node:worker_threads'
import type { DAVResponse } from 'tsdav'
import { parseDavAnswer, type FromDavWorker, type ToDavWorker } from './dav-answers.js'

if (parentPort === null) throw new Error('dav-answers-worker.ts runs as a worker thread only')
const port = parentPort

/** The pieces not yet asked for, by answer. */
const parsed = new Map<number, { raw: unknown, pieces: DAVResponse[][], next: number }>()

function send (id: number): void {
  const entry = parsed.get(id)
  if (entry === undefined) return
  const responses = entry.pieces[entry.next] ?? []
  const first = entry.next === 0
  entry.next++
  const done = entry.next >= entry.pieces.length
  if (done) parsed.delete(id)
  const message: FromDavWorker = first ? { id, raw: entry.raw, responses, done } : { id, responses, done }
  port.postMessage(message)
}

port.on('message', (message: ToDavWorker) => {
  if ('next' in message) {
    send(message.id)
    return
  }
  parseDavAnswer(message.answer).then(({ raw, pieces }) => {
    parsed.set(message.id, { raw, pieces, next: 0 })
    send(message.id)
  }, (error: unknown) => {
    const failure = error instanceof Error ? { name: error.name, message: error.message } : { name: 'Error', message: String(error) }
    port.postMessage({ id: message.id, error: failure } satisfies FromDavWorker)
  })
})
