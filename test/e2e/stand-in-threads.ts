// The Google and Microsoft stand-ins, each on a worker thread of its own, for the benches: the real
// services render their answers on their own machines while the service reads ahead and writes,
// and a stand-in on the bench's one thread charged that rendering to whatever it overlapped.
// The control surface stays synchronous, as in process: a call waits for the stand-in's answer.
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads'
import { moduleWorker } from '../../sync/providers/module-worker.js'
import type { GoogleOptions, GoogleStandIn } from '../../dev/google/index.js'
import type { MicrosoftOptions, MicrosoftStandIn } from '../../dev/microsoft/index.js'

/** What the stand-in's thread is started with (its `workerData`). */
export type StandInThreadStart = ({ kind: 'google', options: GoogleOptions } | { kind: 'microsoft', options: MicrosoftOptions }) & {
  /** The port its control calls arrive on and are answered on. */
  calls: MessagePort
  /** Set to 1 once a control call's answer is posted. */
  answered: SharedArrayBuffer
}

/** From the thread: its addresses once it serves, or the answer to an asynchronous call. */
export type FromStandInThread =
  | { ready: Record<string, string> }
  | { id: number, done: true } | { id: number, error: string }

/** To the thread: a call that is not part of the control surface. */
export interface ToStandInThread { id: number, method: 'notificationsSettled' | 'close' }

/** A control call, and its answer. */
export interface ControlCall { method: string, args: unknown[] }
export type ControlAnswer = { value: unknown } | { error: { name: string, message: string } & Record<string, string | number> }

/** How long a control call may take before the caller gives up: the stand-in's thread is stuck. */
const CONTROL_CALL_TIMEOUT_MS = 60_000

async function startInThread (which: Pick<StandInThreadStart, 'kind' | 'options'>): Promise<Record<string, unknown>> {
  const { kind } = which
  const { port1: calls, port2: theirCalls } = new MessageChannel()
  const answered = new Int32Array(new SharedArrayBuffer(4))
  const start = { ...which, calls: theirCalls, answered: answered.buffer as SharedArrayBuffer } as StandInThreadStart
  const worker: Worker = moduleWorker(import.meta.url, './stand-in-thread', { name: `${kind} stand-in`, workerData: start, transferList: [theirCalls] })
  const pending = new Map<number, { resolve: () => void, reject: (error: Error) => void }>()
  let ids = 0
  let closing: Promise<void> | undefined
  const addresses = await new Promise<Record<string, string>>((resolve, reject) => {
    worker.on('message', (message: FromStandInThread) => {
      if ('ready' in message) return resolve(message.ready)
      const call = pending.get(message.id)
      pending.delete(message.id)
      if ('error' in message) call?.reject(new Error(message.error))
      else call?.resolve()
    })
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`the ${kind} stand-in's thread ended (exit code ${code}) before it served`)))
  })
  worker.on('error', (error) => { process.stderr.write(`the ${kind} stand-in's thread failed: ${error.stack ?? error.message}\n`) })
  worker.on('exit', () => {
    for (const call of pending.values()) call.reject(new Error(`the ${kind} stand-in's thread ended`))
    pending.clear()
  })
  const later = async (method: ToStandInThread['method']): Promise<void> => await new Promise<void>((resolve, reject) => {
    const id = ++ids
    pending.set(id, { resolve, reject })
    const message: ToStandInThread = { id, method }
    worker.postMessage(message)
  })
  const control = (method: string) => (...args: unknown[]): unknown => {
    Atomics.store(answered, 0, 0)
    const call: ControlCall = { method, args }
    calls.postMessage(call)
    if (Atomics.wait(answered, 0, 0, CONTROL_CALL_TIMEOUT_MS) === 'timed-out') throw new Error(`the ${kind} stand-in did not answer ${method} within ${CONTROL_CALL_TIMEOUT_MS} ms`)
    const answer = receiveMessageOnPort(calls)?.message as ControlAnswer | undefined
    if (answer === undefined) throw new Error(`the ${kind} stand-in answered ${method} with nothing`)
    if ('error' in answer) throw Object.assign(new Error(answer.error.message), answer.error)
    return answer.value
  }
  return {
    ...addresses,
    control: new Proxy({}, { get: (_target, method) => typeof method === 'string' ? control(method) : undefined }),
    notificationsSettled: async () => { await later('notificationsSettled') },
    // Closed once; the teardown of a test that closed it already finds it closed.
    close: async () => {
      closing ??= (async () => {
        await later('close')
        await worker.terminate()
      })()
      await closing
    }
  }
}

// The thread answers exactly the stand-in's surface: its addresses, its control object's methods
// (the same objects, copied across), notificationsSettled and close.
export const startGoogleInThread = async (options: GoogleOptions): Promise<GoogleStandIn> => await startInThread({ kind: 'google', options }) as unknown as GoogleStandIn
export const startMicrosoftInThread = async (options: MicrosoftOptions): Promise<MicrosoftStandIn> => await startInThread({ kind: 'microsoft', options }) as unknown as MicrosoftStandIn
