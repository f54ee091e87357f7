// Stands in for `@playtiss/core`, which is not published on npm. The reference module imports it
// only for its CID-keyed "playtiss-shape" helpers (storeAsset, loadAsset, hashContentPlaytiss,
// computeAssetBlock); none of the functions this benchmark calls (storeBlob,
// commitNodeWithExternalId, setRef, logAction, loadEntriesFromDAG, handleLife, handleRecall,
// handleTrace) reach them. Each throws if it is ever called, so a stub can never produce a result.
function unused(name) {
    return () => {
        throw new Error(`@playtiss/core.${name} is not available in bench-vs-reference`);
    };
}

export const computeHash = unused("computeHash");
export const computeStorageBlock = unused("computeStorageBlock");
export const load = unused("load");
export const store = unused("store");
