import { Type, type Static } from '@sinclair/typebox'
import { OBJECT_ID_PATTERN } from './ids.js'

export const UserProfile = Type.Object({
  id: Type.String({ pattern: OBJECT_ID_PATTERN, description: 'Canonical user id' }),
  email: Type.String({ description: 'Normalized email (trimmed, lower case)' }),
  name: Type.Optional(Type.String()),
  signedUpAt: Type.String({ format: 'date-time' }),
  lastLoggedInAt: Type.String({ format: 'date-time' }),
  providerConnected: Type.Boolean({ description: 'Whether a provider calendar is connected: a linked Google account, or a connection the Sync service has named (lib/provider-connection.ts)' })
}, { description: 'The signed-in user; clients backfill lastKnownEmail from it' })

export type UserProfile = Static<typeof UserProfile>
