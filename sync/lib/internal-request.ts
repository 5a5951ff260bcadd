import type { FastifyRequest } from 'fastify'
import { SyncServiceError } from './errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes as received; the signature covers them. */
    syncRawBody?: Buffer
    syncBodyUnparsable?: boolean
    /** The user the verified signature acts for, or null for requests acting for nobody. */
    syncActingUser?: string | null
  }
}

/** Refuses a request whose verified acting user is not the user it asks about. */
export function requireActingUser (request: FastifyRequest, userId: string): void {
  if (request.syncActingUser !== userId) {
    throw new SyncServiceError('FORBIDDEN_USER', 'The signed acting user does not match the user of this request')
  }
}
