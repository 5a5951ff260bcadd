// The real Sync service (sync/app.ts) on a real port, for tests of the bridge and the stream. It
// records every batched change-feed request so tests can count what the backend asks for, and it
// can be stopped and started again on the same port and database to play an outage.
import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import syncApp from '../../sync/app.js'
import type { ChangesBatchRequest } from '../../schemas/sync/index.js'
import { INTERNAL_TOKEN, databaseUri, testConfig } from '../sync/helper.js'

export { INTERNAL_TOKEN }

export class SyncService {
  readonly batchRequests: ChangesBatchRequest['users'][] = []
  /** The waitMs of each batched request, in the same order (0 when not held). */
  readonly batchWaits: number[] = []
  app: FastifyInstance | undefined
  port = 0
  readonly #database: string

  /** `database`: another Sync process's, to play two processes over one database. */
  constructor (private readonly mongoUri: string, database?: string) {
    this.#database = database ?? `sync_rt_${randomBytes(4).toString('hex')}`
  }

  get database (): string {
    return this.#database
  }

  get url (): string {
    return `http://127.0.0.1:${this.port}`
  }

  get running (): FastifyInstance {
    if (this.app === undefined) throw new Error('the Sync service is not running')
    return this.app
  }

  requestsFor (userId: string): number {
    return this.batchRequests.filter((users) => users.some((user) => user.userId === userId)).length
  }

  async start (): Promise<void> {
    const app = Fastify({ logger: false })
    app.addHook('preHandler', async (request) => {
      if (request.method === 'POST' && request.url === '/internal/changes/batch') {
        this.batchRequests.push((request.body as ChangesBatchRequest).users)
        this.batchWaits.push((request.body as ChangesBatchRequest).waitMs ?? 0)
      }
    })
    await app.register(fp(syncApp), { config: testConfig(databaseUri(this.mongoUri, this.#database)), worker: { autoStart: false } })
    await app.listen({ host: '127.0.0.1', port: this.port })
    const address = app.server.address()
    if (address !== null && typeof address === 'object') this.port = address.port
    this.app = app
  }

  async stop (): Promise<void> {
    await this.app?.close()
    this.app = undefined
  }
}

export async function startSyncService (t: Test, mongoUri: string, database?: string): Promise<SyncService> {
  const sync = new SyncService(mongoUri, database)
  await sync.start()
  t.teardown(() => sync.stop())
  return sync
}
