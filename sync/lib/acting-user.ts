import { SyncServiceError } from './errors.js'

/**
 * Refuses a request whose verified acting user (null when the signature acts for nobody) is not
 * the user it asks about.
 */
export function requireActingUser (actingUser: string | null, userId: string): void {
  if (actingUser !== userId) {
    throw new SyncServiceError('FORBIDDEN_USER', 'The signed acting user does not match the user of this request')
  }
}
