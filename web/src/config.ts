// Values fixed into the bundle when it is built (web/build.ts writes them into index.html, as a
// JSON data block the page reads before anything else); the web image is rebuilt when any of
// them changes (specification, "Deployment configuration keys").
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

function readBuildConfig (): WebBuildConfig {
  const text = document.getElementById('calendar-config')?.textContent ?? ''
  try {
    return JSON.parse(text) as WebBuildConfig
  } catch {
    throw new Error('index.html carries no configuration: build the web client with web/build.ts')
  }
}

export const buildConfig: WebBuildConfig = readBuildConfig()

export const apiUrl = buildConfig.apiUrl.replace(/\/+$/, '')
