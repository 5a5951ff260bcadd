// The backend's provider-events endpoints in memory, for tests that do not look at what reaches
// the backend: every batch is kept, and counted as the backend would count a first delivery.
import type {
  GrantRevokedNotice, GrantRevokedResult, ProviderAccountClaim, ProviderAccountClaimResult, ProviderCalendarRemoval, ProviderEventBatch, ProviderEventBatchResult, ProviderWriteState, ProviderWriteStateResult
} from '../../schemas/sync/index.js'
import type { BackendPort } from '../../sync/clients/backend.js'

export class RecordingBackend implements BackendPort {
  readonly batches: ProviderEventBatch[] = []
  readonly removals: ProviderCalendarRemoval[] = []

  async applyEvents (batch: ProviderEventBatch): Promise<ProviderEventBatchResult> {
    this.batches.push(batch)
    const deleted = batch.events.filter((event) => event.status === 'cancelled').length
    return { created: batch.events.length - deleted, updated: 0, deleted, unchanged: 0, waiting: 0, superseded: 0, rejected: 0 }
  }

  async removeCalendar (removal: ProviderCalendarRemoval): Promise<{ deleted: number }> {
    this.removals.push(removal)
    return { deleted: 0 }
  }

  readonly revocations: GrantRevokedNotice[] = []

  async grantRevoked (notice: GrantRevokedNotice): Promise<GrantRevokedResult> {
    this.revocations.push(notice)
    return { sessionsRevoked: 0, streamsClosed: 0 }
  }

  readonly writeStates: ProviderWriteState[] = []

  async setWriteState (state: ProviderWriteState): Promise<ProviderWriteStateResult> {
    this.writeStates.push(state)
    return { updated: true }
  }

  readonly claims: ProviderAccountClaim[] = []
  /** Provider accounts another user holds (by `${provider}:${accountId}`), as the backend would answer for them. */
  readonly heldByOthers = new Set<string>()

  async claimAccount (claim: ProviderAccountClaim): Promise<ProviderAccountClaimResult> {
    this.claims.push(claim)
    return { outcome: this.heldByOthers.has(`${claim.provider}:${claim.accountId}`) ? 'conflict' : 'claimed' }
  }

  async close (): Promise<void> {}
}
