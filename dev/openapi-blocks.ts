// The optional blocks the OpenAPI document is generated with: every one is on, so that the
// document describes each route the service can serve (the email and billing routes exist only with
// their block). The values are placeholders: generating the document sends nothing anywhere.
export function documentedBlocks (billingEndpoint = 'http://127.0.0.1:9'): Record<string, unknown> {
  return {
    email: {
      provider: 'mailer',
      apiKey: 're_openapi_document',
      from: 'Calendar <calendar@example.com>',
      webhookSecret: `whsec_${Buffer.from('openapi document webhook secret').toString('base64')}`,
      unsubscribeSecret: 'openapi-document-unsubscribe'
    },
    billing: {
      secretKey: 'sk_test_openapi_document',
      webhookSecret: 'whsec_openapi_document',
      priceId: 'price_openapi_document',
      publishableKey: 'pk_test_openapi_document',
      endpointBase: billingEndpoint
    }
  }
}
