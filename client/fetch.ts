// The part of `fetch` the client module uses, so that any runtime's fetch can be handed in.

/** What the client reads of a response; `fetch`'s Response in Node and React Native has all of it. */
export interface FetchResponse {
  readonly status: number
  readonly headers: { get: (name: string) => string | null }
  text: () => Promise<string>
  readonly body: ReadableStream<Uint8Array> | null
}

export interface FetchInit {
  method: string
  headers: Record<string, string>
  body?: string
  signal?: AbortSignal
}

export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>
