# prefix.sh: sourced by hack/wine/test.sh and hack/payload/build.sh. Sets up
# Wine to run the payload's Go programs: Debian's wine64 and mingw-w64
# (install.sh), a Wine prefix kept in a cache folder (creating one takes
# ~20 s), and the ProcessPrng shim bcryptprimitives.dll in its system32 (Go
# >= 1.22 programs need it; Wine 8 lacks it: build-shim.sh).
#
#   wine_setup CACHE-DIR    sets wine, wineserver and Wine's environment
#                           (WINEPREFIX=CACHE-DIR/prefix, ...)

wine_setup() {
	local cache=$1 here
	here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
	"$here/install.sh" >&2
	mkdir -p "$cache"
	export WINEPREFIX="$cache/prefix" WINEDEBUG=-all WINEARCH=win64 WINEDLLOVERRIDES="mscoree,mshtml="
	wine=/usr/lib/wine/wine64
	wineserver=/usr/lib/wine/wineserver
	if [ ! -f "$WINEPREFIX/system.reg" ]; then
		echo "wine: creating the Wine prefix $WINEPREFIX" >&2
		timeout 300 "$wine" wineboot --init >/dev/null 2>&1
		"$wineserver" -w
	fi
	"$here/build-shim.sh" "$cache" >&2
	cp "$cache/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
}
