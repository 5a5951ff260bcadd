// Google's OAuth 2.0 endpoints as google-auth-library names them, on an origin that serves
// Google's own paths: Google's in production, a development stand-in's when extprovider.endpointBase
// says so. The backend (sign-in, connect) and the Sync service (its adapter) both use it.
export function googleLibraryEndpointsAt (origin: string) {
  return {
    oauth2AuthBaseUrl: `${origin}/o/oauth2/v2/auth`,
    oauth2TokenUrl: `${origin}/token`,
    oauth2RevokeUrl: `${origin}/revoke`,
    tokenInfoUrl: `${origin}/tokeninfo`,
    oauth2FederatedSignonPemCertsUrl: `${origin}/oauth2/v1/certs`,
    oauth2FederatedSignonJwkCertsUrl: `${origin}/oauth2/v3/certs`
  }
}
