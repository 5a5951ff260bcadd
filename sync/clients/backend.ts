// The Sync service's client of the backend's internal provider-events endpoints (docs/design.md,
// "Provider data"): pages of provider events go in, what the backend applied comes back. Every
// request carries `Authorization: Bearer <backend.serviceToken>`; every answer is checked against
// the shared contract in schemas/sync/provider-events.ts.
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import type { Static, TSchema } from '@sinclair/typebox'
import {
  BACKEND_INTERNAL_PATHS, GrantRevokedResultSchema, ProviderAccountClaimResultSchema, ProviderCalendarRemovalResultSchema, ProviderEventBatchResultSchema, ProviderWriteStateResultSchema
} from '../../schemas/sync/index.js'
import type {
  GrantRevokedNotice, GrantRevokedResult, ProviderCalendarRemoval, ProviderCalendarRemovalResult, ProviderEventBatch, ProviderEventBatchResult,
  ProviderAccountClaim, ProviderAccountClaimResult, ProviderWriteState, ProviderWriteStateResult
} from '../../schemas/sync/index.js'
import { requestIdHeaders } from '../../lib/request-id.js'

/** What the Sync service asks of the backend; tests may give a recording one. */
export interface BackendPort {
  /** Applies one page of a calendar's provider events (idempotent: a replayed page changes nothing). */
  applyEvents: (batch: ProviderEventBatch) => Promise<ProviderEventBatchResult>
  /** Removes a provider calendar's events (or all of a connection's) from the user's data. */
  removeCalendar: (removal: ProviderCalendarRemoval) => Promise<ProviderCalendarRemovalResult>
  /** A provider refused the user's grant for good: the backend revokes the user's sessions. */
  grantRevoked: (notice: GrantRevokedNotice) => Promise<GrantRevokedResult>
  /** Marks an event whose change the provider does not have, or (issue null) clears the mark. */
  setWriteState: (state: ProviderWriteState) => Promise<ProviderWriteStateResult>
  /** After a connect's code exchange: whether the user may hold the provider account (and it is theirs if so). */
  claimAccount: (claim: ProviderAccountClaim) => Promise<ProviderAccountClaimResult>
  close: () => Promise<void>
}

/** The backend did not apply the request; nothing of it may be taken as done. */
class BackendRequestError extends Error {
  override name = 'BackendRequestError'
  readonly statusCode: number | null

  constructor (message: string, statusCode: number | null, options: { cause?: unknown } = {}) {
    super(message, options)
    this.statusCode = statusCode
  }
}

export interface BackendClientOptions {
  /** sync.backendUrl, or the origin of backend.apiUrl; may carry a path prefix. */
  baseUrl: string
  /** backend.serviceToken */
  serviceToken: string
  connections?: number
  timeoutMs?: number
}

const checkers = {
  batch: TypeCompiler.Compile(ProviderEventBatchResultSchema),
  removal: TypeCompiler.Compile(ProviderCalendarRemovalResultSchema),
  revoked: TypeCompiler.Compile(GrantRevokedResultSchema),
  writeState: TypeCompiler.Compile(ProviderWriteStateResultSchema),
  claim: TypeCompiler.Compile(ProviderAccountClaimResultSchema)
}

export class BackendClient implements BackendPort {
  readonly #pool: Pool
  readonly #prefix: string
  readonly #authorization: string

  constructor (options: BackendClientOptions) {
    const base = new URL(options.baseUrl)
    this.#prefix = base.pathname.replace(/\/+$/, '')
    this.#authorization = `Bearer ${options.serviceToken}`
    const timeoutMs = options.timeoutMs ?? 30_000
    this.#pool = new Pool(base.origin, { connections: options.connections ?? 8, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
  }

  async applyEvents (batch: ProviderEventBatch): Promise<ProviderEventBatchResult> {
    return await this.#post(BACKEND_INTERNAL_PATHS.providerEvents, batch, checkers.batch)
  }

  async removeCalendar (removal: ProviderCalendarRemoval): Promise<ProviderCalendarRemovalResult> {
    return await this.#post(BACKEND_INTERNAL_PATHS.providerCalendarRemoval, removal, checkers.removal)
  }

  async grantRevoked (notice: GrantRevokedNotice): Promise<GrantRevokedResult> {
    return await this.#post(BACKEND_INTERNAL_PATHS.grantRevoked, notice, checkers.revoked)
  }

  async setWriteState (state: ProviderWriteState): Promise<ProviderWriteStateResult> {
    return await this.#post(BACKEND_INTERNAL_PATHS.providerWriteState, state, checkers.writeState)
  }

  async claimAccount (claim: ProviderAccountClaim): Promise<ProviderAccountClaimResult> {
    return await this.#post(BACKEND_INTERNAL_PATHS.providerAccountClaim, claim, checkers.claim)
  }

  async close (): Promise<void> {
    await this.#pool.close()
  }

  async #post<T extends TSchema> (path: string, body: unknown, checker: TypeCheck<T>): Promise<Static<T>> {
    let response: Dispatcher.ResponseData
    let text: string
    try {
      response = await this.#pool.request({
        method: 'POST',
        path: this.#prefix + path,
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: this.#authorization, ...requestIdHeaders() },
        body: JSON.stringify(body)
      })
      text = await response.body.text()
    } catch (error) {
      throw new BackendRequestError(`backend request POST ${path} failed`, null, { cause: error })
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new BackendRequestError(`backend answered POST ${path} with ${response.statusCode}`, response.statusCode)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
    if (!checker.Check(parsed)) throw new BackendRequestError(`backend answered POST ${path} with a body outside the contract`, response.statusCode)
    return parsed
  }
}
