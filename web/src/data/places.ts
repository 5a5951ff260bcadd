// Location autocomplete (maps.placesApiKey). Without a key fixed into the bundle the location
// input stays plain and this module asks nothing of anyone.
import { buildConfig } from '../config.js'

export type PlaceSuggester = (input: string, signal: AbortSignal) => Promise<string[]>

/** Google Places Autocomplete (New): text suggestions for what the user typed. */
function googlePlaces (key: string): PlaceSuggester {
  return async (input, signal) => {
    const response = await fetch('https://places.googleapis.com/v1/places:autocomplete', {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
      body: JSON.stringify({ input })
    })
    if (!response.ok) return []
    const body = await response.json() as { suggestions?: Array<{ placePrediction?: { text?: { text?: string } } }> }
    return (body.suggestions ?? []).flatMap((suggestion) => suggestion.placePrediction?.text?.text ?? []).slice(0, 5)
  }
}

export const suggestPlaces: PlaceSuggester | null = buildConfig.placesApiKey === null ? null : googlePlaces(buildConfig.placesApiKey)
