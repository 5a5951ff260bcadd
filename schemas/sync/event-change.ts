import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { CalendarIdSchema, ConnectionIdSchema, EventIdSchema, UserIdSchema } from './common.js'
import { ProviderWriteSubjectSchema } from './provider-events.js'

const EventOperationSchema = Type.Union([
  Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')
], { description: 'What the backend did to its own copy of the event' })

export const EventChangeReportSchema = Type.Object({
  userId: UserIdSchema,
  eventId: EventIdSchema,
  operation: EventOperationSchema,
  idempotencyKey: Type.String({
    minLength: 8,
    maxLength: 200,
    description: 'Chosen by the backend once per own-data write; a repeated report with the same key changes nothing'
  }),
  connectionId: Type.Optional(Type.Union([ConnectionIdSchema, Type.Null()], {
    description: 'The connection whose calendar holds the event, when the backend knows it'
  })),
  calendarId: Type.Optional(Type.Union([CalendarIdSchema, Type.Null()], {
    description: 'The provider calendar holding the event, when the backend knows it'
  })),
  subject: Type.Optional(Type.Union([ProviderWriteSubjectSchema], {
    description: 'The event as a provider write needs it (content after the change, provider identity)'
  }))
}, { additionalProperties: false, description: 'The backend applied an own-data event change' })

export const EventChangeAcceptedSchema = Type.Object({
  duplicate: Type.Boolean({ description: 'true when this idempotency key was applied before; nothing changed now' }),
  providerWriteQueued: Type.Boolean({ description: 'A provider write job was queued (or was already queued) for this change' }),
  heldUntilReconnect: Type.Optional(Type.Boolean({ description: 'The connection\'s grant is revoked: the change waits and is written to the provider when the user reconnects it' }))
}, { additionalProperties: false })

export type EventOperation = Static<typeof EventOperationSchema>
export type EventChangeReport = Static<typeof EventChangeReportSchema>
export type EventChangeAccepted = Static<typeof EventChangeAcceptedSchema>
