import { Type } from '@sinclair/typebox'

// The Sync service's public callbacks (specification, Endpoints: /sync/*), which the backend
// proxies under /sync. Sync's routes validate with these, and the backend's OpenAPI document
// describes the proxied operations with them, so the two cannot drift.

export const OAuthCallbackQuerySchema = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 2048 })),
  state: Type.Optional(Type.String({ maxLength: 4096 })),
  error: Type.Optional(Type.String({ maxLength: 200 }))
}, { description: 'What the provider appends to the redirect URI; other parameters (scope, authuser, prompt) are ignored' })

export const GoogleWebhookHeadersSchema = Type.Object({
  'x-goog-channel-id': Type.String({ minLength: 1, maxLength: 200 }),
  'x-goog-channel-token': Type.Optional(Type.String({ maxLength: 256 })),
  // Google sends it with every message; it names the watched calendar the channel must match.
  'x-goog-resource-id': Type.String({ minLength: 1, maxLength: 500 }),
  'x-goog-resource-state': Type.String({ minLength: 1, maxLength: 40 }),
  'x-goog-message-number': Type.Optional(Type.String({ maxLength: 40 }))
})

// Graph's validation tokens are opaque text of a few hundred characters; the bound only keeps
// arbitrary input out of the echo.
const MAX_VALIDATION_TOKEN = 4096

export const MicrosoftWebhookQuerySchema = Type.Object({
  validationToken: Type.Optional(Type.String({ maxLength: MAX_VALIDATION_TOKEN }))
})

export const MaintenanceResultSchema = Type.Object({
  renewed: Type.Integer({ minimum: 0 }),
  stopped: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 })
}, { additionalProperties: false })
