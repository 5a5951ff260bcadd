import { Type } from '@sinclair/typebox'

// The email block's public routes: the unsubscribe link of every mail and the vendor's webhook.

export const UnsubscribeQuery = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'The token of the mail\'s unsubscribe link: `<userId>.<signature>`' })
}, { additionalProperties: false })

export const OneClickBody = Type.Object({
  'List-Unsubscribe': Type.Literal('One-Click', { description: 'RFC 8058 one-click unsubscribe; the confirm page\'s form sends the same' })
}, { description: 'application/x-www-form-urlencoded' })

export const UnsubscribePage = Type.String({ description: 'An HTML page for the person who followed the link' })

export const ResendWebhookHeaders = Type.Object({
  'svix-id': Type.Optional(Type.String({ description: 'The event\'s id; a retry carries the same' })),
  'svix-timestamp': Type.Optional(Type.String({ description: 'Seconds since the epoch; refused when more than five minutes from now' })),
  'svix-signature': Type.Optional(Type.String({ description: 'v1,<base64 HMAC-SHA256 of id.timestamp.body>' }))
})

export const WebhookAck = Type.Object({
  received: Type.Literal(true),
  duplicate: Type.Optional(Type.Boolean({ description: 'The event was received before and is not applied again' }))
}, { description: 'The event is taken (or was taken before)' })
