// Where search results come from: the account's events through GET /api/events/search when signed
// in, the events in browser storage when not (lib/search.ts applies the server's rule to them).
import { api, ApiError } from './api.js'
import { browserStore } from './browser-store.js'
import { session } from './session.js'
import { loadLocalData } from '../lib/local-events.js'
import { searchLocal, type SearchPage } from '../lib/search.js'
import type { SearchResultsView } from '../../../schemas/event.js'

const local = browserStore()

export async function searchEvents (query: string, cursor: string | null = null): Promise<SearchPage> {
  if (session.get().status !== 'signedIn') return searchLocal(loadLocalData(local), query, { cursor })
  return await api<SearchResultsView>('/events/search', {
    query: {
      q: query,
      ...(cursor === null ? {} : { cursor })
    }
  })
}

/** Why a search got no results, in a sentence (never the server's message, which names fields). */
export function searchFailure (error: unknown): string {
  if (!(error instanceof ApiError)) {
    return navigator.onLine ? 'The search failed: the server could not be reached.' : 'The search failed: this browser is offline.'
  }
  if (error.status === 401) return 'The search failed: your session has ended. Sign in again to search your events.'
  if (error.status === 400) return 'The search failed: the server did not take these words.'
  if (error.status === 429 || error.status === 503) return 'The search failed: the server is busy right now.'
  return `The search failed: the server answered ${error.status}.`
}
