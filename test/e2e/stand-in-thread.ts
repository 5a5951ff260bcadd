// The thread of a stand-in started by stand-in-threads.ts: starts it, tells its addresses, and
// answers the control calls and the asynchronous ones.
import { parentPort, workerData } from 'node:worker_threads'
import { startGoogle } from '../../dev/google/index.js'
import { startMicrosoft } from '../../dev/microsoft/index.js'
import type { ControlAnswer, ControlCall, FromStandInThread, StandInThreadStart, ToStandInThread } from './stand-in-threads.js'

if (parentPort === null) throw new Error('stand-in-thread.ts runs as a worker thread only')
const port = parentPort
const start = workerData as StandInThreadStart
const standIn = start.kind === 'google' ? await startGoogle(start.options) : await startMicrosoft(start.options)
const control = standIn.control as unknown as Record<string, (...args: unknown[]) => unknown>
const answered = new Int32Array(start.answered)

start.calls.on('message', ({ method, args }: ControlCall) => {
  let answer: ControlAnswer
  try {
    const operation = control[method]
    if (typeof operation !== 'function') throw new TypeError(`the ${start.kind} stand-in's control has no ${method}`)
    answer = { value: operation.apply(standIn.control, args) }
  } catch (error) {
    // A control error's own fields (its statusCode) go along, as the caller in process would see them.
    answer = { error: error instanceof Error ? { ...Object.fromEntries(Object.entries(error).filter((entry) => ['string', 'number'].includes(typeof entry[1]))), name: error.name, message: error.message } : { name: 'Error', message: String(error) } }
  }
  start.calls.postMessage(answer)
  Atomics.store(answered, 0, 1)
  Atomics.notify(answered, 0)
})

port.on('message', ({ id, method }: ToStandInThread) => {
  const reply = (message: FromStandInThread) => { port.postMessage(message) }
  standIn[method]().then(() => { reply({ id, done: true }) }, (error: unknown) => { reply({ id, error: error instanceof Error ? error.message : String(error) }) })
})

const addresses = Object.fromEntries(Object.entries(standIn).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
const ready: FromStandInThread = { ready: addresses }
port.postMessage(ready)
