// Package docs holds winnode's user documentation (Markdown). Its only Go
// code is a test that every relative link and anchor in the documents
// resolves, so pages can be moved or renamed without leaving dead links.
package docs
