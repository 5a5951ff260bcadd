import { Type, type Static } from '@sinclair/typebox'

// GET /api/config: what the web client needs to know at run time.

export const AppConfigResponseSchema = Type.Object({
  providers: Type.Object({
    google: Type.Boolean({ description: 'Google sign-in and calendar connect are offered' }),
    microsoft: Type.Boolean({ description: 'Microsoft sign-in is offered' }),
    apple: Type.Boolean({ description: 'Sign in with Apple is offered' })
  }, { additionalProperties: false }),
  placesLookup: Type.Boolean({ description: 'Location autocomplete is on (maps.placesApiKey is set); otherwise the location input is plain' }),
  analytics: Type.Boolean({ description: 'An analytics host is configured' }),
  billing: Type.Optional(Type.Object({
    publishableKey: Type.String({ description: 'The billing vendor\'s publishable key' }),
    trialDays: Type.Integer({ description: 'Length of the card-less trial every account starts with' }),
    price: Type.Optional(Type.Object({
      unitAmount: Type.Integer({ description: 'In the currency\'s smallest unit (cents)' }),
      currency: Type.String({ description: 'ISO 4217, lower case' }),
      interval: Type.String({ description: 'Billing interval: month or year' })
    }, { additionalProperties: false, description: 'The configured price as Stripe holds it; absent while Stripe cannot be reached' }))
  }, { additionalProperties: false, description: 'Present only when all four billing keys are set' }))
}, { additionalProperties: false, description: 'Run-time configuration for the web client' })

export type AppConfigResponse = Static<typeof AppConfigResponseSchema>
