// Values fixed into the bundle when it is built (web/build.ts); the web image is rebuilt when
// any of them changes (specification, "Deployment configuration keys").
export interface WebBuildConfig {
  /** backend.apiUrl: the public API URL, ending in /api. */
  apiUrl: string
  /** extprovider.clientId: Google sign-in and calendar connect are offered only with it. */
  googleClientId: string | null
  /** Where Google's consent page is: Google's own, or a development stand-in's (extprovider.endpointBase). */
  googleAuthorizationEndpoint: string
  /** extprovider2.clientId: Microsoft sign-in (common tenant) is offered only with it. */
  microsoftClientId: string | null
  /** Microsoft's authorization endpoint, or a development stand-in's (extprovider2.endpointBase). */
  microsoftAuthorizationEndpoint: string
  /** idsignin.servicesId: Apple sign-in is offered only with it. */
  appleServicesId: string | null
  /** Apple's authorization endpoint, or a development stand-in's (idsignin.endpointBase). */
  appleAuthorizationEndpoint: string
  analyticsKey: string | null
  analyticsHost: string | null
  /** maps.placesApiKey: location autocomplete; without it the location input is plain. */
  placesApiKey: string | null
}

declare const __CALENDAR_WEB_CONFIG__: WebBuildConfig

export const buildConfig: WebBuildConfig = __CALENDAR_WEB_CONFIG__

export const apiUrl = buildConfig.apiUrl.replace(/\/+$/, '')
