import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { OBJECT_ID_PATTERN } from '../ids.js'

export const UserIdSchema = Type.String({
  pattern: OBJECT_ID_PATTERN,
  description: 'Canonical user id: the 24-hex-character database object id string'
})

export const ConnectionIdSchema = Type.String({
  pattern: OBJECT_ID_PATTERN,
  description: 'Identifier of one provider connection (24 hex characters)'
})

export const EventIdSchema = Type.String({ minLength: 1, maxLength: 200, description: 'Identifier of an event in the backend' })

export const CalendarIdSchema = Type.String({ minLength: 1, maxLength: 500, description: 'Identifier of one sub-calendar at the provider' })

/** Notifications before an event's start (schemas/event.ts), at most the 5 Google keeps. */
export function providerRemindersSchema (description?: string) {
  return Type.Array(Type.Object({
    minutes: Type.Integer({ minimum: 0, maximum: 40_320 })
  }, { additionalProperties: false }), { maxItems: 5, ...(description === undefined ? {} : { description }) })
}

export const ProviderSchema = Type.Union([
  Type.Literal('google'),
  Type.Literal('microsoft'),
  Type.Literal('caldav')
], { description: 'External calendar provider' })

export const ConnectionStateSchema = Type.Union([
  Type.Literal('connecting'),
  Type.Literal('importing'),
  Type.Literal('catchingUp'),
  Type.Literal('healthy'),
  Type.Literal('delayed'),
  Type.Literal('actionRequired'),
  Type.Literal('disconnected')
], { description: 'Derived state of a provider connection' })

export const ConnectionReasonSchema = Type.Union([
  Type.Literal('authorizationRevoked'),
  Type.Literal('readFailure'),
  Type.Literal('userDisconnected'),
  Type.Literal('reconnecting')
], { description: 'Why a connection is in its state; null when the state needs no explanation' })

export const ImportOperationSchema = Type.Union([
  Type.Literal('full'),
  Type.Literal('incremental'),
  Type.Literal('repair')
], { description: 'Kind of import: initial full import, incremental catch-up, or repair after a lost sync cursor' })

export const ImportCountsSchema = Type.Object({
  calendarsDone: Type.Integer({ minimum: 0, description: 'Calendars imported so far' }),
  calendarsTotal: Type.Integer({ minimum: 0, description: 'Calendars to import in this operation' }),
  eventsImported: Type.Integer({ minimum: 0, description: 'Events imported so far' })
}, { additionalProperties: false })

// A pattern rather than `format: 'date-time'` so the client can check answers with TypeBox alone,
// without registering formats.
export const IsoDateTimeSchema = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
  description: 'ISO-8601 instant in UTC, as produced by Date.prototype.toISOString'
})

export type Provider = Static<typeof ProviderSchema>
export type ConnectionState = Static<typeof ConnectionStateSchema>
export type ConnectionReason = Static<typeof ConnectionReasonSchema>
export type ImportOperation = Static<typeof ImportOperationSchema>
export type ImportCounts = Static<typeof ImportCountsSchema>
