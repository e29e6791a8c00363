// A program that links one layer's whole library against the layers below it and nothing
// else (cmake/layers.cmake): a call from a folder into a higher one fails to link here.
int main() { return 0; }
