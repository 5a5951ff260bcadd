import { STATUS_CODES } from 'node:http'
import { SYNC_ERROR_STATUS } from '../../schemas/sync/index.js'
import type { SyncErrorBody, SyncErrorCode } from '../../schemas/sync/index.js'

/** A deliberate refusal of the Sync service: its status comes from the code, so the two never disagree. */
export class SyncServiceError extends Error {
  override name = 'SyncServiceError'
  readonly code: SyncErrorCode
  readonly statusCode: number
  readonly connectionId: string | undefined

  constructor (code: SyncErrorCode, message: string, connectionId?: string) {
    super(message)
    this.code = code
    this.statusCode = SYNC_ERROR_STATUS[code]
    this.connectionId = connectionId
  }

  toBody (): SyncErrorBody {
    return errorBody(this.code, this.message, this.connectionId)
  }
}

export function errorBody (code: SyncErrorCode, message: string, connectionId?: string): SyncErrorBody {
  const statusCode = SYNC_ERROR_STATUS[code]
  return {
    statusCode,
    code,
    error: STATUS_CODES[statusCode] ?? 'Error',
    message,
    ...(connectionId === undefined ? {} : { connectionId })
  }
}
