// A raw HTTP reader of an SSE response that keeps the exact bytes, so tests can check framing
// (the retry line first, comment heartbeats, event names) and not only what a client library parses.
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

export interface SseBlock {
  /** The raw text of one block, without its terminating blank line. */
  raw: string
  comments: string[]
  event: string | undefined
  data: string | undefined
  retry: string | undefined
}

function parseBlock (raw: string): SseBlock {
  const block: SseBlock = { raw, comments: [], event: undefined, data: undefined, retry: undefined }
  for (const line of raw.split('\n')) {
    if (line.startsWith(':')) {
      block.comments.push(line.slice(1).trim())
      continue
    }
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'event') block.event = value
    else if (field === 'data') block.data = block.data === undefined ? value : `${block.data}\n${value}`
    else if (field === 'retry') block.retry = value
  }
  return block
}

export class RawSseReader {
  readonly blocks: SseBlock[] = []
  text = ''
  ended = false
  status = 0
  headers: IncomingHttpHeaders = {}
  response: IncomingMessage | undefined
  #pending = ''
  #waiters = new Set<() => void>()

  /**
   * Opens the stream as a client does against a process that just started on a loaded machine: a
   * 503 (a shed request) is tried again after the Retry-After it names, for up to `patienceMs`
   * (test/processes.ts fetchPatiently). Any other answer is returned as it came.
   */
  static async openPatiently (url: string, headers: Record<string, string> = {}, patienceMs = 30_000): Promise<RawSseReader> {
    const until = Date.now() + patienceMs
    for (;;) {
      const reader = await RawSseReader.open(url, headers)
      const seconds = Number(reader.headers['retry-after'])
      const wait = (Number.isFinite(seconds) && seconds > 0 ? seconds : 1) * 1000
      if (reader.status !== 503 || Date.now() + wait > until) return reader
      reader.close()
      await sleep(wait)
    }
  }

  static async open (url: string, headers: Record<string, string> = {}, options: { localAddress?: string } = {}): Promise<RawSseReader> {
    const reader = new RawSseReader()
    await new Promise<void>((resolve, reject) => {
      const req = request(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false, localAddress: options.localAddress }, (res) => {
        reader.response = res
        reader.status = res.statusCode ?? 0
        reader.headers = res.headers
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => reader.#receive(chunk))
        res.on('end', () => { reader.ended = true; reader.#wake() })
        res.on('close', () => { reader.ended = true; reader.#wake() })
        res.on('error', () => { reader.ended = true; reader.#wake() })
        resolve()
      })
      req.on('error', reject)
      req.end()
    })
    return reader
  }

  #receive (chunk: string): void {
    this.text += chunk
    this.#pending += chunk
    let end = this.#pending.indexOf('\n\n')
    while (end !== -1) {
      this.blocks.push(parseBlock(this.#pending.slice(0, end)))
      this.#pending = this.#pending.slice(end + 2)
      end = this.#pending.indexOf('\n\n')
    }
    this.#wake()
  }

  #wake (): void {
    for (const waiter of this.#waiters) waiter()
  }

  /** Resolves once the predicate holds; rejects after `timeoutMs` so a broken test fails, not hangs. */
  async until (predicate: (reader: RawSseReader) => boolean, timeoutMs = 5000): Promise<void> {
    if (predicate(this)) return
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { this.#waiters.delete(check); reject(new Error(`condition not met; received so far: ${JSON.stringify(this.text.slice(-500))}`)) }, timeoutMs)
      const check = (): void => {
        if (predicate(this)) {
          clearTimeout(timer)
          this.#waiters.delete(check)
          resolve()
        }
      }
      this.#waiters.add(check)
    })
  }

  messages (): unknown[] {
    return this.blocks.filter((block) => block.data !== undefined).map((block) => JSON.parse(block.data ?? 'null') as unknown)
  }

  async untilMessages (count: number, timeoutMs?: number): Promise<unknown[]> {
    await this.until((reader) => reader.messages().length >= count, timeoutMs)
    return this.messages()
  }

  async untilEnded (timeoutMs?: number): Promise<void> {
    await this.until((reader) => reader.ended, timeoutMs)
  }

  pause (): void {
    this.response?.pause()
  }

  close (): void {
    this.response?.destroy()
  }
}

/** Polls a condition that has no event to wait on (for example the server side of a closed socket). */
export async function eventually (condition: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`)
    await sleep(10)
  }
}
