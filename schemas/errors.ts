import { Type, type Static } from '@sinclair/typebox'

// The one error body of the backend: Fastify's own shape, with a machine-readable code when the
// specification names one (CONNECTION_REVOKED, MAINTENANCE, ...).
export const ErrorResponse = Type.Object({
  statusCode: Type.Integer({ description: 'HTTP status, repeated for clients that lose it' }),
  code: Type.Optional(Type.String({ description: 'Stable machine-readable error code' })),
  error: Type.String({ description: 'HTTP status text' }),
  message: Type.String({ description: 'Human-readable explanation; generic for unexpected server errors' }),
  connectionId: Type.Optional(Type.String({ description: 'The provider connection a CONNECTION_REVOKED refusal is about' }))
}, { $id: 'ErrorResponse', description: 'Error body' })

export type ErrorResponse = Static<typeof ErrorResponse>

// The connect endpoint's conflict body, fixed by the specification.
export const ConnectionConflictResponse = Type.Object({
  result: Type.Literal('User not connected'),
  code: Type.Union([Type.Literal('EXTERNAL_ACCOUNT_ALREADY_CONNECTED'), Type.Literal('EXTERNAL_CONNECT_EMAIL_MISMATCH')]),
  message: Type.String()
}, { description: 'Provider connect refused; the current session is kept' })
