//! `search_internet`'s backends: a `SearXNG` instance's JSON API, or the Brave or Bing web search
//! API with a key from the environment.
