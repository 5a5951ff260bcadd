// A small server answering the Sync change-feed contract (schemas/sync), for bridge tests that need
// to count requests, hold invalidations back or take Sync down and up again on the same port.
// Requests are signature-checked with the same module the real service uses.
import Fastify, { type FastifyInstance } from 'fastify'
import { verifyInternalRequest } from '../../lib/internal-auth.js'
import type { ChangesBatchRequest, ChangesPage, Invalidation, SyncMetadata } from '../../schemas/sync/index.js'

export const fakeSyncSecret = 'fake-sync-internal-secret-0123456789abcdef'

export class FakeSync {
  readonly feeds = new Map<string, Invalidation[]>()
  readonly batchRequests: Array<{ users: Array<{ userId: string, cursor: string | null }> }> = []
  readonly metadataRequests: string[] = []
  unauthorized = 0
  port = 0
  #app: FastifyInstance | undefined

  get url (): string {
    return `http://127.0.0.1:${this.port}`
  }

  append (userId: string, invalidation: Invalidation): void {
    const feed = this.feeds.get(userId) ?? []
    feed.push(invalidation)
    this.feeds.set(userId, feed)
  }

  /** Batched requests that asked for this user's feed. */
  requestsFor (userId: string): number {
    return this.batchRequests.filter((request) => request.users.some((user) => user.userId === userId)).length
  }

  page (userId: string, cursor: string | null): ChangesPage {
    const feed = this.feeds.get(userId) ?? []
    if (cursor === null) return { userId, cursor: `c${feed.length}`, invalidations: [], hasMore: false, resyncRequired: false }
    const match = /^c(\d+)$/.exec(cursor)
    const position = match ? Number(match[1]) : Number.NaN
    if (!Number.isInteger(position) || position > feed.length) {
      return { userId, cursor: `c${feed.length}`, invalidations: [], hasMore: false, resyncRequired: true }
    }
    return { userId, cursor: `c${feed.length}`, invalidations: feed.slice(position), hasMore: false, resyncRequired: false }
  }

  async start (): Promise<void> {
    const app = Fastify({ logger: false })
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => { done(null, body) })
    app.addHook('preHandler', async (request, reply) => {
      const verified = verifyInternalRequest({
        secret: fakeSyncSecret, method: request.method, path: request.url, body: typeof request.body === 'string' ? request.body : undefined, headers: request.headers
      }, Date.now())
      if (!verified.ok) {
        this.unauthorized++
        return await reply.code(401).send({ statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: verified.reason })
      }
    })
    app.post('/internal/changes/batch', async (request) => {
      const body = JSON.parse(request.body as string) as ChangesBatchRequest
      this.batchRequests.push({ users: body.users.map((user) => ({ ...user })) })
      return { pages: body.users.map((user) => this.page(user.userId, user.cursor)) }
    })
    app.get<{ Params: { userId: string } }>('/internal/users/:userId/metadata', async (request) => {
      this.metadataRequests.push(request.params.userId)
      const metadata: SyncMetadata = { userId: request.params.userId, cloudMutationMode: 'enabled', execution: 'passive', connections: [] }
      return metadata
    })
    await app.listen({ host: '127.0.0.1', port: this.port })
    const address = app.server.address()
    if (address !== null && typeof address === 'object') this.port = address.port
    this.#app = app
  }

  /** Sync goes down: the port refuses connections until start() again. */
  async stop (): Promise<void> {
    await this.#app?.close()
    this.#app = undefined
  }
}
